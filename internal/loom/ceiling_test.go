package loom

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loom-gateway/gateway/internal/ifc"
)

func TestReadCeiling(t *testing.T) {
	tests := []struct {
		name   string
		record string
		facets []string
		want   ifc.Confidentiality
	}{
		{
			name:   "one atom",
			record: `{"loomReadCeiling":["https://loom.example/facet/work"],"facets":["work"],"facetSource":"dispatch"}`,
			facets: []string{"work"},
			want:   ifc.Confidentiality{ifc.Clause(`"https://loom.example/facet/work"`)},
		},
		{
			name: "clauses compacted, not shape-checked",
			record: `{
				"loomReadCeiling": [ {"anyOf": [ "a", "b" ]}, 17, {"type": "x", "n": 1.0} ],
				"facets": ["work"],
				"facetSource": "dispatch",
				"extra": true
			}`,
			want: ifc.Confidentiality{ifc.Clause(`{"anyOf":["a","b"]}`), ifc.Clause(`17`), ifc.Clause(`{"type":"x","n":1.0}`)},
		},
		{
			name:   "facets compared sorted",
			record: `{"loomReadCeiling":["a"],"facets":["work","home"],"facetSource":"s"}`,
			facets: []string{"home", "work"},
			want:   ifc.Confidentiality{ifc.Clause(`"a"`)},
		},
		{
			name:   "record facets not compared without configured facets",
			record: `{"loomReadCeiling":["a"],"facets":["other"],"facetSource":"s"}`,
			want:   ifc.Confidentiality{ifc.Clause(`"a"`)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &Config{ReadCeilingFile: writeFile(t, "ceiling.json", tt.record), Facets: tt.facets}
			got, err := ReadCeiling(cfg)
			if err != nil {
				t.Fatalf("ReadCeiling: %v", err)
			}
			if !got.Defined() {
				t.Fatal("ReadCeiling returned an undefined ceiling")
			}
			if diff := cmp.Diff(tt.want, got.Clauses()); diff != "" {
				t.Errorf("ReadCeiling clauses mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadCeilingNone(t *testing.T) {
	got, err := ReadCeiling(&Config{Facets: []string{"work"}})
	if err != nil || got.Defined() {
		t.Fatalf("ReadCeiling without a record = %v, %v; want NoCeiling", got, err)
	}
}

func TestReadCeilingEveryCall(t *testing.T) {
	path := writeFile(t, "ceiling.json", `{"loomReadCeiling":["a"],"facets":["work"],"facetSource":"s"}`)
	cfg := &Config{ReadCeilingFile: path}
	if _, err := ReadCeiling(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"loomReadCeiling":["b"],"facets":["work"],"facetSource":"s"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCeiling(cfg)
	if err != nil || string(got.Clauses()[0]) != `"b"` {
		t.Fatalf("second ReadCeiling = %v, %v; want the rewritten record", got.Clauses(), err)
	}
	os.Remove(path)
	if _, err := ReadCeiling(cfg); err == nil {
		t.Fatal("ReadCeiling after removal succeeded")
	}
}

func TestReadCeilingRefusals(t *testing.T) {
	const ok = `"loomReadCeiling":["a"],"facets":["work"],"facetSource":"s"`
	tests := []struct {
		name   string
		record string
		facets []string
		reason string
	}{
		{"empty file", ``, nil, ReasonRecordNotJSON},
		{"not json", `{"loomReadCeiling":`, nil, ReasonRecordNotJSON},
		{"trailing garbage", `{` + ok + `} x`, nil, ReasonRecordNotJSON},
		{"duplicate key", `{` + ok + `,"facets":["work"]}`, nil, ReasonRecordNotJSON},
		{"invalid utf8", "{" + ok + ",\"x\":\"\xff\"}", nil, ReasonRecordNotJSON},
		{"array", `[]`, nil, ReasonRecordNotObject},
		{"null", `null`, nil, ReasonRecordNotObject},
		{"string", `"x"`, nil, ReasonRecordNotObject},
		{"ceiling missing", `{"facets":["work"],"facetSource":"s"}`, nil, ReasonRecordCeiling},
		{"ceiling empty", `{"loomReadCeiling":[],"facets":["work"],"facetSource":"s"}`, nil, ReasonRecordCeiling},
		{"ceiling object", `{"loomReadCeiling":{"anyOf":["a"]},"facets":["work"],"facetSource":"s"}`, nil, ReasonRecordCeiling},
		{"ceiling null", `{"loomReadCeiling":null,"facets":["work"],"facetSource":"s"}`, nil, ReasonRecordCeiling},
		{"facets missing", `{"loomReadCeiling":["a"],"facetSource":"s"}`, nil, ReasonRecordFacets},
		{"facets empty", `{"loomReadCeiling":["a"],"facets":[],"facetSource":"s"}`, nil, ReasonRecordFacets},
		{"facets string", `{"loomReadCeiling":["a"],"facets":"work","facetSource":"s"}`, nil, ReasonRecordFacets},
		{"facet not an id", `{"loomReadCeiling":["a"],"facets":["Work"],"facetSource":"s"}`, nil, ReasonRecordFacets},
		{"facet number", `{"loomReadCeiling":["a"],"facets":[1],"facetSource":"s"}`, nil, ReasonRecordFacets},
		{"facetSource missing", `{"loomReadCeiling":["a"],"facets":["work"]}`, nil, ReasonRecordFacetSource},
		{"facetSource empty", `{"loomReadCeiling":["a"],"facets":["work"],"facetSource":""}`, nil, ReasonRecordFacetSource},
		{"facetSource number", `{"loomReadCeiling":["a"],"facets":["work"],"facetSource":1}`, nil, ReasonRecordFacetSource},
		{"ceiling checked before facets", `{"loomReadCeiling":[],"facets":[]}`, nil, ReasonRecordCeiling},
		{"other facets", `{` + ok + `}`, []string{"home"}, ReasonRecordOtherFacets},
		{"fewer facets", `{` + ok + `}`, []string{"home", "work"}, ReasonRecordOtherFacets},
		{"duplicates matter", `{"loomReadCeiling":["a"],"facets":["work","work"],"facetSource":"s"}`, []string{"work"}, ReasonRecordOtherFacets},
		{"duplicates matter the other way", `{` + ok + `}`, []string{"work", "work"}, ReasonRecordOtherFacets},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "ceiling.json", tt.record)
			_, err := ReadCeiling(&Config{ReadCeilingFile: path, Facets: tt.facets})
			var ce *CeilingUnavailableError
			if !errors.As(err, &ce) || ce.Reason != tt.reason {
				t.Fatalf("ReadCeiling = %v, want reason %q", err, tt.reason)
			}
			if strings.Contains(err.Error(), path) {
				t.Errorf("message %q names the path", err)
			}
		})
	}
}

func TestReadCeilingFileRefusals(t *testing.T) {
	dir := t.TempDir()
	unreadable := filepath.Join(dir, "unreadable.json")
	if err := os.WriteFile(unreadable, []byte(`{}`), 0o000); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"x":"`+strings.Repeat("a", maxRecordBytes)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, reason string
	}{
		{"missing", filepath.Join(dir, "absent.json"), ReasonRecordMissing},
		{"missing parent", filepath.Join(dir, "absent", "ceiling.json"), ReasonRecordMissing},
		{"directory", dir, ReasonRecordDirectory},
		{"fifo", fifo, ReasonRecordNotRegular},
		{"too large", big, ReasonRecordTooLarge},
		{"not a directory on the way", filepath.Join(big, "x"), ReasonRecordUnreadable},
	}
	if os.Geteuid() != 0 { // root reads a mode-000 file
		tests = append(tests, struct{ name, path, reason string }{"permission", unreadable, ReasonRecordUnreadable})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadCeiling(&Config{ReadCeilingFile: tt.path})
			var ce *CeilingUnavailableError
			if !errors.As(err, &ce) || ce.Reason != tt.reason {
				t.Fatalf("ReadCeiling = %v, want reason %q", err, tt.reason)
			}
			if strings.Contains(err.Error(), dir) {
				t.Errorf("message %q names the path", err)
			}
		})
	}
}
