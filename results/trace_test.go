package results

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"plexbench/scoring"
)

// withTrace is rep with a trace of its 6 windows of 49 scored tokens.
func withTrace(rep scoring.Report) scoring.Report {
	tr := &scoring.TokenTrace{TokenIDsSHA256: rep.TokenIDsSHA256, Tokens: make([]int32, 600),
		Pieces: map[int32]string{}, Short: map[int32]int32{}}
	for i := range tr.Tokens {
		tr.Tokens[i] = int32(i % 7)
		tr.Pieces[int32(i%7)] = strings.Repeat("x", 1+i%7)
	}
	for w := range 6 {
		tw := scoring.TraceWindow{Index: w, Begin: 100 * w, FirstTarget: 100*w + 51}
		for j := range 49 {
			tw.Tokens = append(tw.Tokens, scoring.TokenScore{NLL: float32(j) / 10, RunTop: int32(j % 7), RunTopP: 0.5})
		}
		tr.Windows = append(tr.Windows, tw)
	}
	rep.Trace = tr
	return rep
}

// TestRecordTrace: a record's trace is written beside it and read back
// as it was; a rerun without one removes it, and reading then says the
// record has none; a trace that is not the record's is refused.
func TestRecordTrace(t *testing.T) {
	root := t.TempDir()
	rep := recorded(withTrace(finished()), "aaaa")
	path, err := WriteRecord(root, &rep)
	if err != nil {
		t.Fatal(err)
	}
	if TracePath(path) != strings.TrimSuffix(path, ".json")+".trace" {
		t.Fatalf("trace path %s", TracePath(path))
	}
	// A glob that matches the trace too lists the record alone.
	if recs, _, err := Records(root, []string{"m-aaaa*"}); err != nil || len(recs) != 1 {
		t.Errorf("Records over a record and its trace: %d, %v", len(recs), err)
	}
	got, err := ReadTrace(path, &rep)
	if err != nil || !reflect.DeepEqual(got, rep.Trace) {
		t.Fatalf("trace read back: %v", err)
	}
	other := rep
	other.TokenIDsSHA256 = strings.Repeat("cd", 32)
	if _, err := ReadTrace(path, &other); !errors.Is(err, scoring.ErrBadTrace) || !strings.Contains(err.Error(), "tokens") {
		t.Errorf("another record's trace: %v", err)
	}
	bare := rep
	bare.Trace = nil
	if _, err := WriteRecord(root, &bare); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(TracePath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a rerun without a trace left the old one: %v", err)
	}
	if _, err := ReadTrace(path, &bare); !errors.Is(err, ErrNoTrace) || !strings.Contains(err.Error(), "rerun") {
		t.Errorf("a record without a trace: %v", err)
	}
}
