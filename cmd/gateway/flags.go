package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
)

// durationFlag is a time.Duration flag whose refusal says how to write
// one: "30" is refused with "use 30s", not the standard library's
// "parse error".
type durationFlag struct{ p *time.Duration }

func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationFlag{p}, name, usage)
}

func (d durationFlag) String() string {
	if d.p == nil {
		return ""
	}
	return d.p.String()
}

func (d durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err == nil {
		*d.p = v
		return nil
	}
	if _, nerr := strconv.ParseFloat(strings.TrimSpace(s), 64); nerr == nil {
		return fmt.Errorf("a duration needs a unit: use %ss (or ms, m, h)", strings.TrimSpace(s))
	}
	return errors.New("not a duration: use a number with a unit, such as 30s, 500ms or 2m")
}

// toolNames lists the eight tools, for a message that refuses another.
func toolNames() string {
	names := make([]string, len(loom.Tools))
	for i, t := range loom.Tools {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// hostListenHint is what a --host-listen address that cannot be TCP should
// have been: a path is a unix socket, written unix:/path.
func hostListenHint(addr string) string {
	if strings.HasPrefix(addr, "/") || strings.HasPrefix(addr, "./") || strings.HasSuffix(addr, ".sock") {
		return "a unix socket is written unix:" + addr + " (and TCP host:port)"
	}
	return ""
}
