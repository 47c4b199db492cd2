package loom_test

import (
	"encoding/json"
	"testing"

	"github.com/loom-gateway/gateway/internal/ifc"
	"github.com/loom-gateway/gateway/internal/loom"
)

func BenchmarkScratch10K(b *testing.B) {
	p := SearchPayload(10<<10, 1, false)
	rows, env, _ := loom.Split(loom.Search, p)
	in := ifc.Input{OutputID: "x", Kind: "search", Notice: ifc.Notice, Rows: rows, Envelope: env, Ceiling: benchCeiling, Unlabeled: benchUnlabeled}
	res := ifc.Measure(in)
	b.Run("split", func(b *testing.B) {
		for b.Loop() {
			loom.Split(loom.Search, p)
		}
	})
	b.Run("measure", func(b *testing.B) {
		for b.Loop() {
			ifc.Measure(in)
		}
	})
	b.Run("appendjson", func(b *testing.B) {
		for b.Loop() {
			res.AppendJSON(nil, handles[:res.Admitted])
		}
	})
	b.Run("appendjs", func(b *testing.B) {
		for b.Loop() {
			ifc.AppendJS(nil, p)
		}
	})
	b.Run("any", func(b *testing.B) {
		for b.Loop() {
			var v any
			json.Unmarshal(p, &v)
		}
	})
	b.Run("measure1", func(b *testing.B) {
		in := in
		in.Rows = in.Rows[:1]
		for b.Loop() {
			ifc.Measure(in)
		}
	})
	b.Run("measure0", func(b *testing.B) {
		in := in
		in.Rows = nil
		for b.Loop() {
			ifc.Measure(in)
		}
	})
}
