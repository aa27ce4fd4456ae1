package scoring

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestReadRecordRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	for _, c := range []struct {
		path string
		want string
	}{
		{write("plain.json", `{"object":"lse.perplexity","perplexity":3}`), "no schema_version"},
		{write("zero.json", `{"object":"lse.perplexity","record":{"name":"x"}}`), "the record has no schema_version"},
		{write("future.json", `{"object":"lse.perplexity","record":{"schema_version":99}}`), "schema_version 99"},
		{write("junk.json", `{"object":`), "not JSON"},
	} {
		_, ok, err := ReadRecord(c.path)
		if ok || !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), c.path+": ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ok %v, %v; want ErrBadRecord naming the file and %q", c.path, ok, err, c.want)
		}
	}
	for _, p := range []string{write("ab.json", `{"object":"plexbench.ab"}`), write("stopped.json", `{"object":"lse.perplexity","partial":true}`)} {
		if _, ok, err := ReadRecord(p); ok || err != nil {
			t.Errorf("%s: ok %v err %v; want skipped", p, ok, err)
		}
	}
}

// TestGroupRecords: one group per protocol, the base's own run first, then
// by mean KLD; without a base by perplexity; same names deduplicated.
func TestGroupRecords(t *testing.T) {
	mk := func(name string, ctx int, base string, kld float64, ppl float64, finished int) Report {
		r := Report{Ctx: ctx, Method: MethodChunks, TokenIDsSHA256: "t", Perplexity: ppl}
		if kld >= 0 {
			r.KLD = &KLDReport{MeanKLD: kld, TopK: 32}
		}
		r.Record = &RecordInfo{Name: name, Finished: time.Unix(int64(finished), 0),
			Protocol: Protocol{Method: MethodChunks, Ctx: ctx, TokenIDsSHA256: "t", Base: base}}
		r.Record.ProtocolDigest = r.Record.Protocol.Digest()
		return r
	}
	g := GroupRecords([]Report{
		mk("q4", 128, "B", 0.08, 4, 1), mk("q8", 128, "B", 0.0007, 3.9, 1), mk("f32", 128, "B", -1, 3.8, 1),
		mk("q5", 128, "B", 0.5, 3.9, 1), mk("q5", 128, "B", 0.02, 3.9, 2), // a newer q5 record replaces the old
		mk("x", 64, "", -1, 5, 1), mk("y", 64, "", -1, 4.5, 1),
	})
	if len(g) != 2 {
		t.Fatalf("%d groups, want 2", len(g))
	}
	names := func(g RecordGroup) string {
		var s []string
		for _, r := range g.Records {
			s = append(s, r.Record.Name)
		}
		return strings.Join(s, " ")
	}
	if names(g[0]) != "y x" || names(g[1]) != "f32 q8 q5 q4" {
		t.Fatalf("groups %q, %q", names(g[0]), names(g[1]))
	}
	if d := ProtocolDifferences(g); strings.Join(d, ",") != "ctx,base" {
		t.Fatalf("differences %v", d)
	}
}

// TestRecordLlamaBaseProtocol: the run that wrote a llama.cpp base (over
// a longer text, with a chunk limit) and a run compared with it share one
// protocol.
func TestRecordLlamaBaseProtocol(t *testing.T) {
	f := newFake(40, 6, 1, 0)
	tokens := randomTokens(2, 950, 40)
	path := filepath.Join(t.TempDir(), "l.kld")
	w, err := Run(context.Background(), f, Request{Tokens: tokens, Ctx: 100, Chunks: 5, KLDBaseOut: path, KLDBaseFormat: BaseFormatLlama})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Run(context.Background(), f.withNoise(0.1, 3), Request{KLDBase: path})
	if err != nil {
		t.Fatal(err)
	}
	id, err := IdentifyBase(path)
	if err != nil || id.Format != BaseFormatLlama || !strings.HasPrefix(id.Identity, "llama:") {
		t.Fatalf("IdentifyBase: %+v %v", id, err)
	}
	pw, pc := ProtocolOf(&w, id), ProtocolOf(&c, id)
	if pw.Digest() != pc.Digest() || w.TokenIDsSHA256 == c.TokenIDsSHA256 {
		t.Fatalf("writer %+v, compared %+v", pw, pc)
	}
	pb, err := IdentifyBase(filepath.Join(t.TempDir(), "none.kld"))
	if err == nil {
		t.Fatalf("a missing base identified: %+v", pb)
	}
}
