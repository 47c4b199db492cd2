package loom

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/ifc"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	tests := []struct {
		name string
		json string
		want Config
	}{
		{
			name: "broker minimal",
			json: `{"cliPath":"/opt/loom/bin/loom","transport":{"kind":"broker","queuePath":"/run/q"}}`,
			want: Config{CLIPath: "/opt/loom/bin/loom", Transport: Transport{Kind: "broker", QueuePath: "/run/q"}},
		},
		{
			name: "direct with actor",
			json: `{"cliPath":"/l","transport":{"kind":"direct","instanceDir":"/i","runId":"run 7","actor":"agent:x"}}`,
			want: Config{CLIPath: "/l", Transport: Transport{Kind: "direct", InstanceDir: "/i", RunID: "run 7", Actor: "agent:x"}},
		},
		{
			name: "direct without actor",
			json: `{"cliPath":"/l","transport":{"kind":"direct","instanceDir":"/i","runId":"r"}}`,
			want: Config{CLIPath: "/l", Transport: Transport{Kind: "direct", InstanceDir: "/i", RunID: "r"}},
		},
		{
			name: "actor is not checked",
			json: `{"cliPath":"/l","transport":{"kind":"direct","instanceDir":"/i","runId":"r","actor":17}}`,
			want: Config{CLIPath: "/l", Transport: Transport{Kind: "direct", InstanceDir: "/i", RunID: "r"}},
		},
		{
			name: "keys of the other kind are accepted and not carried",
			json: `{"cliPath":"/l","transport":{"kind":"broker","queuePath":"/q","instanceDir":5,"runId":"","actor":"agent:x"}}`,
			want: Config{CLIPath: "/l", Transport: Transport{Kind: "broker", QueuePath: "/q"}},
		},
		{
			name: "everything",
			json: `{
				"cliPath": "/opt/loom/src/bin/loom",
				"transport": { "kind": "broker", "queuePath": "/private/loom/run/command-queue" },
				"readCeilingFile": "/private/loom/run/read-ceiling.json",
				"facets": ["work", "home-2"],
				"unlabeledRowLabel": ["https://loom.example/facet/work"]
			}`,
			want: Config{
				CLIPath:           "/opt/loom/src/bin/loom",
				Transport:         Transport{Kind: "broker", QueuePath: "/private/loom/run/command-queue"},
				ReadCeilingFile:   "/private/loom/run/read-ceiling.json",
				Facets:            []string{"work", "home-2"},
				UnlabeledRowLabel: ifc.Confidentiality{ifc.Clause(`"https://loom.example/facet/work"`)},
			},
		},
		{
			name: "empty unlabeledRowLabel",
			json: `{"cliPath":"/l","transport":{"kind":"broker","queuePath":"/q"},"unlabeledRowLabel":[]}`,
			want: Config{CLIPath: "/l", Transport: Transport{Kind: "broker", QueuePath: "/q"}},
		},
		{
			name: "runId of 128 UTF-16 units",
			json: `{"cliPath":"/l","transport":{"kind":"direct","instanceDir":"/i","runId":"` + strings.Repeat("😀", 64) + `"}}`,
			want: Config{CLIPath: "/l", Transport: Transport{Kind: "direct", InstanceDir: "/i", RunID: strings.Repeat("😀", 64)}},
		},
		{
			name: "runId with DEL and inner space",
			json: `{"cliPath":"/l","transport":{"kind":"direct","instanceDir":"/i","runId":"a\u007f b"}}`,
			want: Config{CLIPath: "/l", Transport: Transport{Kind: "direct", InstanceDir: "/i", RunID: "a\x7f b"}},
		},
		{
			name: "facet of 64 characters",
			json: `{"cliPath":"/l","transport":{"kind":"broker","queuePath":"/q"},"facets":["` + strings.Repeat("a", 64) + `","0-"]}`,
			want: Config{CLIPath: "/l", Transport: Transport{Kind: "broker", QueuePath: "/q"}, Facets: []string{strings.Repeat("a", 64), "0-"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LoadConfig(writeFile(t, "config.json", tt.json))
			if err != nil {
				t.Fatalf("LoadConfig: %v", err)
			}
			if diff := cmp.Diff(&tt.want, got); diff != "" {
				t.Errorf("LoadConfig mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadConfigRefusals(t *testing.T) {
	const broker = `"transport":{"kind":"broker","queuePath":"/q"}`
	const direct = `"cliPath":"/l","transport":{"kind":"direct","instanceDir":"/i","runId":`
	tests := []struct {
		name, json string
		key        string
		reason     string
	}{
		{"not json", `{"cliPath":`, "", "not valid JSON"},
		{"trailing garbage", `{} x`, "", "not valid JSON"},
		{"bom", "\ufeff{}", "", "not valid JSON"},
		{"invalid utf8", "{\"cliPath\":\"/\xff\"}", "", "not valid JSON"},
		{"array", `[]`, "", "the top-level value must be a JSON object"},
		{"null", `null`, "", "the top-level value must be a JSON object"},
		{"duplicate top key", `{"cliPath":"/a","cliPath":"/b",` + broker + `}`, "cliPath", "duplicate key"},
		{"duplicate transport key", `{"cliPath":"/a","transport":{"kind":"broker","kind":"direct","queuePath":"/q"}}`, "transport.kind", "duplicate key"},
		{"duplicate nested key", `{"cliPath":"/a",` + broker + `,"unlabeledRowLabel":[{"type":"a","type":"b"}]}`, "unlabeledRowLabel[0].type", "duplicate key"},
		{"unknown top key", `{"cliPath":"/l",` + broker + `,"readCeilingFlie":"/r"}`, "readCeilingFlie", "unknown key"},
		{"unknown key before missing cliPath", `{"cliPth":"/l",` + broker + `}`, "cliPth", "unknown key"},
		{"unknown transport key", `{"cliPath":"/l","transport":{"kind":"broker","queuePath":"/q","queue":"/x"}}`, "transport.queue", "unknown key"},
		{"missing cliPath", `{` + broker + `}`, "cliPath", "is required"},
		{"cliPath not string", `{"cliPath":5,` + broker + `}`, "cliPath", "must be a string"},
		{"cliPath null", `{"cliPath":null,` + broker + `}`, "cliPath", "must be a string"},
		{"missing transport", `{"cliPath":"/l"}`, "transport", "is required"},
		{"transport array", `{"cliPath":"/l","transport":[]}`, "transport", "must be an object"},
		{"transport null", `{"cliPath":"/l","transport":null}`, "transport", "must be an object"},
		{"cliPath relative", `{"cliPath":"bin/loom",` + broker + `}`, "cliPath", "must be an absolute path"},
		{"cliPath empty", `{"cliPath":"",` + broker + `}`, "cliPath", "must be an absolute path"},
		{"kind missing", `{"cliPath":"/l","transport":{"queuePath":"/q"}}`, "transport.kind", `must be "broker" or "direct"`},
		{"kind other", `{"cliPath":"/l","transport":{"kind":"rpc","queuePath":"/q"}}`, "transport.kind", `must be "broker" or "direct"`},
		{"kind wrong case", `{"cliPath":"/l","transport":{"kind":"Broker","queuePath":"/q"}}`, "transport.kind", `must be "broker" or "direct"`},
		{"queuePath missing", `{"cliPath":"/l","transport":{"kind":"broker"}}`, "transport.queuePath", "is required for the broker transport"},
		{"queuePath relative", `{"cliPath":"/l","transport":{"kind":"broker","queuePath":"q"}}`, "transport.queuePath", "must be an absolute path"},
		{"queuePath number", `{"cliPath":"/l","transport":{"kind":"broker","queuePath":1}}`, "transport.queuePath", "must be a string"},
		{"instanceDir missing", `{"cliPath":"/l","transport":{"kind":"direct","runId":"r"}}`, "transport.instanceDir", "is required for the direct transport"},
		{"instanceDir relative", `{"cliPath":"/l","transport":{"kind":"direct","instanceDir":"i","runId":"r"}}`, "transport.instanceDir", "must be an absolute path"},
		{"runId missing", `{"cliPath":"/l","transport":{"kind":"direct","instanceDir":"/i"}}`, "transport.runId", "is required for the direct transport"},
		{"runId number", `{` + direct + `7}}`, "transport.runId", "must be a string"},
		{"runId empty", `{` + direct + `""}}`, "transport.runId", "must be a non-empty string"},
		{"runId leading space", `{` + direct + `" r"}}`, "transport.runId", "must not begin or end with whitespace"},
		{"runId trailing newline", `{` + direct + `"r\n"}}`, "transport.runId", "must not begin or end with whitespace"},
		{"runId trailing NBSP", `{` + direct + `"r\u00a0"}}`, "transport.runId", "must not begin or end with whitespace"},
		{"runId leading ideographic space", `{` + direct + `"\u3000r"}}`, "transport.runId", "must not begin or end with whitespace"},
		{"runId trailing BOM", `{` + direct + `"r\ufeff"}}`, "transport.runId", "must not begin or end with whitespace"},
		{"runId only spaces", `{` + direct + `"  "}}`, "transport.runId", "must not begin or end with whitespace"},
		{"runId 129 units", `{` + direct + `"` + strings.Repeat("😀", 64) + `a"}}`, "transport.runId", "must be at most 128 characters"},
		{"runId control inside", `{` + direct + `"a\u0001b"}}`, "transport.runId", "must not contain control characters"},
		{"readCeilingFile relative", `{"cliPath":"/l",` + broker + `,"readCeilingFile":"ceiling.json"}`, "readCeilingFile", "must be an absolute path"},
		{"readCeilingFile empty", `{"cliPath":"/l",` + broker + `,"readCeilingFile":""}`, "readCeilingFile", "must be an absolute path"},
		{"readCeilingFile null", `{"cliPath":"/l",` + broker + `,"readCeilingFile":null}`, "readCeilingFile", "must be an absolute path"},
		{"facets empty", `{"cliPath":"/l",` + broker + `,"facets":[]}`, "facets", "must be a non-empty array of facet ids"},
		{"facets string", `{"cliPath":"/l",` + broker + `,"facets":"work"}`, "facets", "must be a non-empty array of facet ids"},
		{"facets null", `{"cliPath":"/l",` + broker + `,"facets":null}`, "facets", "must be a non-empty array of facet ids"},
		{"facet number", `{"cliPath":"/l",` + broker + `,"facets":["work",1]}`, "facets[1]", "must be a string"},
		{"facet uppercase", `{"cliPath":"/l",` + broker + `,"facets":["Work"]}`, "facets[0]", "must match ^[a-z0-9][a-z0-9-]{0,63}$"},
		{"facet leading dash", `{"cliPath":"/l",` + broker + `,"facets":["-work"]}`, "facets[0]", "must match ^[a-z0-9][a-z0-9-]{0,63}$"},
		{"facet empty", `{"cliPath":"/l",` + broker + `,"facets":["work",""]}`, "facets[1]", "must match ^[a-z0-9][a-z0-9-]{0,63}$"},
		{"facet 65", `{"cliPath":"/l",` + broker + `,"facets":["` + strings.Repeat("a", 65) + `"]}`, "facets[0]", "must match ^[a-z0-9][a-z0-9-]{0,63}$"},
		{"facet underscore", `{"cliPath":"/l",` + broker + `,"facets":["a_b"]}`, "facets[0]", "must match ^[a-z0-9][a-z0-9-]{0,63}$"},
		{"facet trailing newline", `{"cliPath":"/l",` + broker + `,"facets":["work\n"]}`, "facets[0]", "must match ^[a-z0-9][a-z0-9-]{0,63}$"},
		{"unlabeledRowLabel object", `{"cliPath":"/l",` + broker + `,"unlabeledRowLabel":{"confidentiality":[]}}`, "unlabeledRowLabel", "must be a clause list"},
		{"unlabeledRowLabel null", `{"cliPath":"/l",` + broker + `,"unlabeledRowLabel":null}`, "unlabeledRowLabel", "must be a clause list"},
		{"unlabeledRowLabel bad clause", `{"cliPath":"/l",` + broker + `,"unlabeledRowLabel":[17]}`, "unlabeledRowLabel", "must be a clause list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := LoadConfig(writeFile(t, "config.json", tt.json))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("LoadConfig = %+v, %v; want *ConfigError", cfg, err)
			}
			if ce.Key != tt.key || ce.Reason != tt.reason {
				t.Errorf("LoadConfig error = {Key: %q, Reason: %q}, want {Key: %q, Reason: %q}", ce.Key, ce.Reason, tt.key, tt.reason)
			}
			if tt.key != "" && !strings.Contains(err.Error(), tt.key) {
				t.Errorf("message %q does not name the key %q", err, tt.key)
			}
		})
	}
}

func TestLoadConfigFile(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, path string
		reason     string
	}{
		{"relative path", "config.json", "the configuration path must be absolute"},
		{"empty path", "", "the configuration path must be absolute"},
		{"missing file", filepath.Join(dir, "absent.json"), "cannot read the file"},
		{"directory", dir, "cannot read the file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadConfig(tt.path)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Reason != tt.reason {
				t.Fatalf("LoadConfig(%q) = %v, want reason %q", tt.path, err, tt.reason)
			}
			if tt.path != "" && strings.Contains(err.Error(), tt.path) {
				t.Errorf("message %q names the path", err)
			}
		})
	}
}

func TestConfigErrorMessage(t *testing.T) {
	tests := []struct {
		err  *ConfigError
		want string
	}{
		{&ConfigError{Key: "transport.queuePath", Reason: "must be an absolute path"}, "loom config: transport.queuePath: must be an absolute path"},
		{&ConfigError{Reason: "not valid JSON"}, "loom config: not valid JSON"},
		{&ConfigError{Key: "bad key\n", Reason: "unknown key"}, `loom config: "bad key\n": unknown key`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
	cause := errors.New("open /x: permission denied")
	if err := (&ConfigError{Reason: "cannot read the file", Err: cause}); !errors.Is(err, cause) || strings.Contains(err.Error(), "/x") {
		t.Errorf("ConfigError with cause: Is = %v, message %q", errors.Is(err, cause), err)
	}
}

func TestValidate(t *testing.T) {
	valid := func() *Config {
		return &Config{CLIPath: "/l", Transport: Transport{Kind: TransportBroker, QueuePath: "/q"}}
	}
	tests := []struct {
		name   string
		mutate func(*Config)
		key    string
	}{
		{"valid", func(*Config) {}, ""},
		{"zero transport", func(c *Config) { c.Transport = Transport{} }, "transport.kind"},
		{"empty facets", func(c *Config) { c.Facets = []string{} }, "facets"},
		{"relative ceiling file", func(c *Config) { c.ReadCeilingFile = "r.json" }, "readCeilingFile"},
		{"direct without run id", func(c *Config) { c.Transport = Transport{Kind: TransportDirect, InstanceDir: "/i"} }, "transport.runId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.mutate(c)
			err := c.Validate()
			var ce *ConfigError
			switch {
			case tt.key == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.key != "" && (!errors.As(err, &ce) || ce.Key != tt.key):
				t.Fatalf("Validate() = %v, want key %q", err, tt.key)
			}
		})
	}
}

func TestEnv(t *testing.T) {
	direct := &Config{CLIPath: "/l", Transport: Transport{Kind: TransportDirect, InstanceDir: "/i", RunID: "run-1", Actor: "agent:a"}}
	tests := []struct {
		name    string
		cfg     *Config
		path    string
		pathSet bool
		want    []string
	}{
		{"broker", brokerConfig, "/usr/bin", true, []string{"PATH=/usr/bin", "LOOM_PAGE_RPC_QUEUE=/run/loom/queue", "LOOM_SEARCH_BROKER_QUEUE=/run/loom/queue"}},
		{"direct", direct, "/usr/bin", true, []string{"PATH=/usr/bin", "LOOM_INSTANCE_DIR=/i", "LOOM_DISPATCH_ID=run-1"}},
		{"unset PATH", direct, "", false, []string{"PATH=" + DefaultPath, "LOOM_INSTANCE_DIR=/i", "LOOM_DISPATCH_ID=run-1"}},
		{"empty PATH", brokerConfig, "", true, []string{"PATH=", "LOOM_PAGE_RPC_QUEUE=/run/loom/queue", "LOOM_SEARCH_BROKER_QUEUE=/run/loom/queue"}},
		{"no transport", &Config{CLIPath: "/l"}, "/bin", true, []string{"PATH=/bin"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Env(tt.cfg, tt.path, tt.pathSet)
			if got == nil {
				t.Fatal("Env returned nil")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Env mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if DefaultPath != "/usr/local/bin:/opt/homebrew/bin:/usr/bin:/bin:/usr/sbin:/sbin" {
		t.Errorf("DefaultPath = %q", DefaultPath)
	}
}
