package scoring

import (
	"testing"
	"time"
)

// TestRecordDigestStopped: a complete run's digest is what it always was
// (protocol, engine config, model hash); a run a stopping rule ended
// early gets another, by its rule and the window it stopped at, in the
// same protocol group.
func TestRecordDigestStopped(t *testing.T) {
	rep := Report{Method: MethodChunks, Ctx: 64, Stride: 64, ChunkLimit: 4, TokenIDsSHA256: "t", WindowsTotal: 4, WindowsScored: 4,
		Config: EngineConfig{Threads: 2, KVCacheDType: "f16"}}
	t0 := time.Unix(0, 0)
	info := func(r Report) RecordInfo {
		return NewRecordInfo(&r, BaseID{}, RecordModel{SHA256Prefix: "abcd"}, Machine{}, "test", t0, t0)
	}
	full := info(rep)
	old := digestOf(struct {
		Protocol string
		Engine   EngineConfig
		Model    string
	}{full.ProtocolDigest, rep.Config, "abcd"})
	if full.Digest != old {
		t.Fatalf("a complete run's digest %s, was %s", full.Digest, old)
	}
	stopped := rep
	stopped.WindowsScored = 2
	stopped.StoppedEarly = &StopReport{Rule: "ppl<1000", Met: true, Windows: 2}
	elsewhere := stopped
	elsewhere.StoppedEarly = &StopReport{Rule: "ppl<1000", Met: true, Windows: 3}
	s, e := info(stopped), info(elsewhere)
	if s.Digest == full.Digest || s.Digest == e.Digest || s.Digest != info(stopped).Digest {
		t.Errorf("digests: full %s, stopped at 2 %s, at 3 %s", full.Digest, s.Digest, e.Digest)
	}
	if s.ProtocolDigest != full.ProtocolDigest {
		t.Errorf("a stopped run left its protocol group: %s vs %s", s.ProtocolDigest, full.ProtocolDigest)
	}
}

// TestGroupBaseNameNotPending: a group's base is named by a record that
// names it by a kept file, not by a record made while it was written
// under a dot name.
func TestGroupBaseNameNotPending(t *testing.T) {
	mk := func(name, baseName string) Report {
		p := Protocol{Method: MethodChunks, Ctx: 64, TokenIDsSHA256: "t", Base: "plexbench:1", BaseName: baseName}
		return Report{Record: &RecordInfo{Name: name, Protocol: p, ProtocolDigest: p.Digest()}}
	}
	g := GroupRecords([]Report{mk("a", ".pending-20260102-030405-1.kld"), mk("b", "a.kld")})
	if len(g) != 1 || g[0].Protocol.BaseName != "a.kld" {
		t.Fatalf("groups %+v", g)
	}
}
