package loom

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/jsjson"
)

// Transport kinds.
const (
	TransportBroker = "broker"
	TransportDirect = "direct"
)

// Transport is the command transport of the host configuration. Kind is
// TransportBroker (QueuePath set) or TransportDirect (InstanceDir and RunID
// set). Actor is carried unused: it attributes writes, and no retrieval
// command writes. Keys of the other kind are accepted and not carried.
type Transport struct {
	Kind        string
	QueuePath   string
	InstanceDir string
	RunID       string
	Actor       string
}

// Config is the host retrieval configuration of SEMANTICS (a). The agent
// never sees it. A Config is not modified by this package and may be shared
// between goroutines.
type Config struct {
	// CLIPath is the absolute path of the loom executable, run directly.
	CLIPath   string
	Transport Transport
	// ReadCeilingFile is the absolute path of the read-ceiling record, read
	// on every call; "" when none is configured.
	ReadCeilingFile string
	// Facets is the configured facet list; nil when not configured (then a
	// record's facets are not compared).
	Facets []string
	// UnlabeledRowLabel is joined into the label an unlabeled row is given
	// (Gateway decision 12); nil when not configured.
	UnlabeledRowLabel ifc.Confidentiality
}

// maxConfigBytes bounds the configuration file read.
const maxConfigBytes = 1 << 20

var (
	topKeys       = []string{"cliPath", "transport", "readCeilingFile", "facets", "unlabeledRowLabel"}
	transportKeys = []string{"kind", "queuePath", "instanceDir", "runId", "actor"}
)

// LoadConfig reads, parses and validates the configuration file at path,
// which must be absolute. The file is strict (Gateway decision 3): an unknown
// key at the top or inside transport, a duplicate key anywhere, a missing or
// mistyped field, or any rule of SEMANTICS (a) failing returns a
// *ConfigError naming the key. Checks run in this order: the path; JSON
// (duplicates refused); a top-level object; unknown keys (top level, then
// transport, each in file order); presence and type of each field; then
// the value rules of Validate. The first failure is reported.
func LoadConfig(path string) (*Config, error) {
	if !isAbs(path) {
		return nil, &ConfigError{Reason: "the configuration path must be absolute"}
	}
	data, err := readCapped(path, maxConfigBytes)
	if err != nil {
		return nil, &ConfigError{Reason: "cannot read the file", Detail: readProblem(err), Err: err}
	}
	return ParseConfig(data)
}

// readProblem names why readCapped failed, as a fixed phrase.
func readProblem(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "it does not exist"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, errIsDir):
		return "it is a directory"
	case errors.Is(err, errNotRegular):
		return "it is not a regular file"
	case errors.Is(err, errTooLarge):
		return fmt.Sprintf("it is larger than %d bytes", maxConfigBytes)
	}
	return "an I/O error"
}

// ParseConfig is LoadConfig without the file: it parses and validates the
// content of a configuration file.
func ParseConfig(data []byte) (*Config, error) {
	if !jsontext.Value(data).IsValid(jsontext.AllowDuplicateNames(true)) {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, &ConfigError{Reason: "not valid JSON", Detail: "the file is empty"}
		}
		line, col := syntaxPosition(data)
		return nil, &ConfigError{Reason: "not valid JSON", Line: line, Column: col}
	}
	if key, ok := firstDuplicate(data); ok {
		return nil, &ConfigError{Key: key, Reason: "duplicate key"}
	}
	top, err := jsjson.Members(data)
	if err != nil {
		return nil, &ConfigError{Reason: "the top-level value must be a JSON object"}
	}
	if k, ok := firstUnknown(top, topKeys); ok {
		return nil, &ConfigError{Key: k, Reason: "unknown key"}
	}
	f := membersByName(top)

	var cfg Config
	cli, ok := f["cliPath"]
	switch {
	case !ok:
		return nil, &ConfigError{Key: "cliPath", Reason: "is required"}
	case cli.Kind() != '"':
		return nil, &ConfigError{Key: "cliPath", Reason: "must be a string"}
	}
	cfg.CLIPath, _ = jsjson.UnquoteValue(cli)

	tr, ok := f["transport"]
	switch {
	case !ok:
		return nil, &ConfigError{Key: "transport", Reason: "is required"}
	case tr.Kind() != '{':
		return nil, &ConfigError{Key: "transport", Reason: "must be an object"}
	}
	trMembers, _ := jsjson.Members(tr)
	if k, ok := firstUnknown(trMembers, transportKeys); ok {
		return nil, &ConfigError{Key: "transport." + k, Reason: "unknown key"}
	}
	t := membersByName(trMembers)
	// Type checks of the kind's own keys; their values are checked by Validate.
	kind, ok := t["kind"]
	if !ok || kind.Kind() != '"' {
		return nil, &ConfigError{Key: "transport.kind", Reason: `must be "broker" or "direct"`}
	}
	cfg.Transport.Kind, _ = jsjson.UnquoteValue(kind)
	var own []string
	switch cfg.Transport.Kind {
	case TransportBroker:
		own = []string{"queuePath"}
	case TransportDirect:
		own = []string{"instanceDir", "runId"}
	default:
		return nil, &ConfigError{Key: "transport.kind", Reason: `must be "broker" or "direct"`}
	}
	for _, k := range own {
		v, ok := t[k]
		if !ok {
			return nil, &ConfigError{Key: "transport." + k, Reason: "is required for the " + cfg.Transport.Kind + " transport"}
		}
		if v.Kind() != '"' {
			return nil, &ConfigError{Key: "transport." + k, Reason: "must be a string"}
		}
		s, _ := jsjson.UnquoteValue(v)
		switch k {
		case "queuePath":
			cfg.Transport.QueuePath = s
		case "instanceDir":
			cfg.Transport.InstanceDir = s
		case "runId":
			cfg.Transport.RunID = s
		}
	}
	if a, ok := t["actor"]; ok && a.Kind() == '"' && cfg.Transport.Kind == TransportDirect {
		cfg.Transport.Actor, _ = jsjson.UnquoteValue(a)
	}

	if v, ok := f["readCeilingFile"]; ok {
		if v.Kind() != '"' {
			return nil, &ConfigError{Key: "readCeilingFile", Reason: "must be an absolute path"}
		}
		cfg.ReadCeilingFile, _ = jsjson.UnquoteValue(v)
		if cfg.ReadCeilingFile == "" {
			return nil, &ConfigError{Key: "readCeilingFile", Reason: "must be an absolute path"}
		}
	}
	if v, ok := f["facets"]; ok {
		if v.Kind() != '[' {
			return nil, &ConfigError{Key: "facets", Reason: "must be a non-empty array of facet ids"}
		}
		elems, _ := jsjson.Elements(v)
		cfg.Facets = make([]string, 0, len(elems))
		for i, e := range elems {
			if e.Kind() != '"' {
				return nil, &ConfigError{Key: fmt.Sprintf("facets[%d]", i), Reason: "must be a string"}
			}
			s, _ := jsjson.UnquoteValue(e)
			cfg.Facets = append(cfg.Facets, s)
		}
	}
	if v, ok := f["unlabeledRowLabel"]; ok {
		c, err := ifc.ParseConfidentiality(v)
		if err != nil {
			return nil, &ConfigError{Key: "unlabeledRowLabel", Reason: "must be a clause list", Err: err}
		}
		cfg.UnlabeledRowLabel = c // nil for [], which adds nothing either
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// Validate checks the value rules of SEMANTICS (a) on a Config built in code
// (LoadConfig runs it too) and returns a *ConfigError naming the first key
// that breaks one. It does not touch the file system.
func (c *Config) Validate() error {
	if !isAbs(c.CLIPath) {
		return &ConfigError{Key: "cliPath", Reason: "must be an absolute path"}
	}
	switch c.Transport.Kind {
	case TransportBroker:
		if !isAbs(c.Transport.QueuePath) {
			return &ConfigError{Key: "transport.queuePath", Reason: "must be an absolute path"}
		}
	case TransportDirect:
		if !isAbs(c.Transport.InstanceDir) {
			return &ConfigError{Key: "transport.instanceDir", Reason: "must be an absolute path"}
		}
		id := c.Transport.RunID
		switch {
		case id == "":
			return &ConfigError{Key: "transport.runId", Reason: "must be a non-empty string"}
		case !isJSTrimmed(id):
			return &ConfigError{Key: "transport.runId", Reason: "must not begin or end with whitespace"}
		case jsjson.UTF16Len(id) > 128:
			return &ConfigError{Key: "transport.runId", Reason: "must be at most 128 characters"}
		case hasControl(id):
			return &ConfigError{Key: "transport.runId", Reason: "must not contain control characters"}
		}
	default:
		return &ConfigError{Key: "transport.kind", Reason: `must be "broker" or "direct"`}
	}
	if c.ReadCeilingFile != "" && !isAbs(c.ReadCeilingFile) {
		return &ConfigError{Key: "readCeilingFile", Reason: "must be an absolute path"}
	}
	if c.Facets != nil && len(c.Facets) == 0 {
		return &ConfigError{Key: "facets", Reason: "must be a non-empty array of facet ids"}
	}
	for i, f := range c.Facets {
		if !isFacetID(f) {
			return &ConfigError{Key: fmt.Sprintf("facets[%d]", i), Reason: "must match ^[a-z0-9][a-z0-9-]{0,63}$"}
		}
	}
	return nil
}

// syntaxPosition returns the line and column (1-based; the column in
// bytes) where data, which is not valid JSON, stops being JSON: the
// offending byte, or the end of the data when it ends too soon.
func syntaxPosition(data []byte) (line, col int) {
	d := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))
	_, err := d.ReadValue()
	if err == nil {
		_, err = d.ReadToken() // something after the value
	}
	off := int64(len(data))
	if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		off = min(se.ByteOffset, off)
	}
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = len(before) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// isAbs reports whether p is an absolute POSIX path.
func isAbs(p string) bool { return strings.HasPrefix(p, "/") }

// isFacetID reports whether s matches ^[a-z0-9][a-z0-9-]{0,63}$.
func isFacetID(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// firstUnknown returns the first name of ms (file order) not in known.
func firstUnknown(ms []jsjson.Member, known []string) (string, bool) {
	for _, m := range ms {
		found := false
		for _, k := range known {
			if m.Name == k {
				found = true
				break
			}
		}
		if !found {
			return m.Name, true
		}
	}
	return "", false
}

// membersByName indexes ms by name; the last of duplicate names wins.
func membersByName(ms []jsjson.Member) map[string]jsontext.Value {
	f := make(map[string]jsontext.Value, len(ms))
	for _, m := range ms {
		f[m.Name] = m.Value
	}
	return f
}

// firstDuplicate returns the path of the first duplicate object key in the
// valid JSON value data ("transport.kind", "a[2].b").
func firstDuplicate(data []byte) (string, bool) {
	d := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true))
	var walk func(path string) (string, bool)
	walk = func(path string) (string, bool) {
		tok, err := d.ReadToken()
		if err != nil {
			return "", false
		}
		switch tok.Kind() {
		case '{':
			seen := map[string]bool{}
			for d.PeekKind() != '}' {
				name, err := d.ReadToken()
				if err != nil {
					return "", false
				}
				p := name.String()
				if path != "" {
					p = path + "." + p
				}
				if seen[name.String()] {
					return p, true
				}
				seen[name.String()] = true
				if k, ok := walk(p); ok {
					return k, ok
				}
			}
			d.ReadToken()
		case '[':
			for i := 0; d.PeekKind() != ']'; i++ {
				if k, ok := walk(fmt.Sprintf("%s[%d]", path, i)); ok {
					return k, ok
				}
			}
			d.ReadToken()
		}
		return "", false
	}
	return walk("")
}

var (
	errIsDir      = errors.New("loom: is a directory")
	errNotRegular = errors.New("loom: not a regular file")
	errTooLarge   = errors.New("loom: file too large")
)

// readCapped reads the regular file at path, refusing more than limit bytes
// and anything that is not a regular file. It opens without blocking, so a
// FIFO at path cannot hang the caller.
func readCapped(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, errIsDir
	}
	if !fi.Mode().IsRegular() {
		return nil, errNotRegular
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	if int64(buf.Len()) > limit {
		return nil, errTooLarge
	}
	return buf.Bytes(), nil
}
