package main

import (
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/loom-gateway/gateway/internal/loom"
)

// durationVar is fs.DurationVar: the standard flag keeps --help's
// "duration" for its value; durationRefusal words its refusal.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	fs.DurationVar(p, name, value, usage)
}

// parseRefusal matches the flag package's refusal of a value its Set
// could not read.
var parseRefusal = regexp.MustCompile(`^invalid value "(.*)" for flag -([a-z0-9-]+): parse error$`)

// durationRefusal rewords fs.Parse's refusal of a duration flag so that
// it says how to write one ("30" is refused with "use 30s", not the
// standard library's "parse error"); any other error is returned as it is.
func durationRefusal(fs *flag.FlagSet, err error) error {
	m := parseRefusal.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	f := fs.Lookup(m[2])
	if f == nil {
		return err
	}
	if g, ok := f.Value.(flag.Getter); !ok {
		return err
	} else if _, ok := g.Get().(time.Duration); !ok {
		return err
	}
	value := strings.TrimSpace(m[1])
	if _, nerr := strconv.ParseFloat(value, 64); nerr == nil {
		return fmt.Errorf("invalid value %q for flag -%s: a duration needs a unit: use %ss (or ms, m, h)", m[1], m[2], value)
	}
	return fmt.Errorf("invalid value %q for flag -%s: not a duration: use a number with a unit, such as 30s, 500ms or 2m", m[1], m[2])
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
