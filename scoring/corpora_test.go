package scoring

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestCorporaReport: the averages from the sections' own figures, the
// JSON without top-level figures that reads back whole, a single report's
// JSON untouched by MarshalJSON, and records expanded into their corpora.
func TestCorporaReport(t *testing.T) {
	section := func(text string, n int, nll float64, bytes int64, ppl, bpb float64) Report {
		return Report{Object: ReportObject, Text: text, Method: MethodChunks, Ctx: 64, Stride: 64, ScoredTokens: n, MeanNLL: nll,
			Perplexity: ppl, TextBytes: bytes, BitsPerByte: bpb, PrefillTokens: 2 * n, PrefillTokensPerSecond: 1000,
			ElapsedSeconds: 1, TokenIDsSHA256: strings.Repeat(text[:1], 64),
			Windows: []WindowReport{{Index: 0, Scored: n, NLLSum: nll * float64(n)}},
			Record:  &RecordInfo{SchemaVersion: RecordSchemaVersion, Name: "m_" + text}}
	}
	a := section("a.txt", 100, 1.5, 400, math.Exp(1.5), 1.5*100/(math.Ln2*400))
	b := section("b.txt", 300, 4.0, 900, math.Exp(4.0), 4.0*300/(math.Ln2*900))
	rep := CorporaReport([]Report{a, b})
	avg := rep.CorporaAverage
	sum := 1.5*100 + 4.0*300
	want := CorporaAverage{
		TokenWeighted: CorporaTokenWeighted{Tokens: 400, TextBytes: 1300, MeanNLL: sum / 400, Perplexity: math.Exp(sum / 400), BitsPerByte: sum / (math.Ln2 * 1300)},
		Macro:         CorporaMacro{Perplexity: (a.Perplexity + b.Perplexity) / 2, BitsPerByte: (a.BitsPerByte + b.BitsPerByte) / 2, Corpora: 2},
	}
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-14*math.Abs(y) }
	g, w := avg.TokenWeighted, want.TokenWeighted
	if g.Tokens != w.Tokens || g.TextBytes != w.TextBytes || !near(g.MeanNLL, w.MeanNLL) || !near(g.Perplexity, w.Perplexity) ||
		!near(g.BitsPerByte, w.BitsPerByte) || avg.Macro.Corpora != 2 || !near(avg.Macro.Perplexity, want.Macro.Perplexity) ||
		!near(avg.Macro.BitsPerByte, want.Macro.BitsPerByte) {
		t.Fatalf("averages %+v\nwant %+v", *avg, want)
	}
	if rep.PrefillTokens != 800 || rep.ElapsedSeconds != 2 || rep.PrefillTokensPerSecond != 1000 || rep.Ctx != 64 || rep.Partial {
		t.Errorf("totals: %d prefill tokens, %v s, %v tok/s, ctx %d, partial %v", rep.PrefillTokens, rep.ElapsedSeconds, rep.PrefillTokensPerSecond, rep.Ctx, rep.Partial)
	}

	data, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	json.Unmarshal(data, &top)
	for _, k := range []string{"perplexity", "mean_nll", "tokens", "scored_tokens", "text_bytes", "bits_per_byte", "windows"} {
		if _, ok := top[k]; ok {
			t.Errorf("top-level %q in a report of corpora", k)
		}
	}
	var back Report
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rep) {
		t.Fatalf("read back:\n%+v\nwant\n%+v", back, rep)
	}

	// One corpus's report is written as before: every field, in order.
	type plain Report
	got, _ := a.JSON()
	old, _ := json.MarshalIndent(plain(a), "", "  ")
	if string(got) != string(old)+"\n" || !strings.Contains(string(got), `"perplexity": `) {
		t.Errorf("a single report's JSON changed:\n%s\nwant\n%s", got, old)
	}

	// A partial section makes the report partial and stays out of the averages.
	b.Partial, b.PartialReason = true, "stopped"
	if p := CorporaReport([]Report{a, b}); !p.Partial || p.CorporaAverage.Macro.Corpora != 1 || p.CorporaAverage.TokenWeighted.Tokens != 100 {
		t.Errorf("with a partial section: partial %v, averages %+v", p.Partial, p.CorporaAverage)
	}

	// Records: the report of corpora becomes its corpora's records, in order.
	rep.Record = &RecordInfo{SchemaVersion: RecordSchemaVersion, Name: "m_corpora"}
	other := section("c.txt", 10, 2, 40, math.Exp(2), 0)
	got2 := ExpandCorpora([]Report{other, rep})
	if len(got2) != 3 || got2[0].Text != "c.txt" || got2[1].Text != "a.txt" || got2[2].Text != "b.txt" {
		t.Fatalf("expanded: %d records", len(got2))
	}
	if p := ProtocolOf(&rep, BaseID{}); p.Corpora != 2 || p.Text != "a.txt + b.txt" || len(p.TokenIDsSHA256) != 64 {
		t.Errorf("protocol %+v", p)
	}
}
