package profiles

import (
	"github.com/spf13/pflag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCorporaParseAndRoundTrip reads a corpora list, resolves it against
// the profile's folder, saves and reloads it unchanged, and diffs it.
func TestCorporaParseAndRoundTrip(t *testing.T) {
	dir := t.TempDir()
	src := "name = \"two\"\ncorpora = [\"texts/a.txt\", \"/abs/b.txt\"]\nctx = 64\n"
	path := filepath.Join(dir, "two.toml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"texts/a.txt", "/abs/b.txt"}; !reflect.DeepEqual(p.Corpora, want) || p.Text != "" {
		t.Fatalf("corpora %q text %q, want %q", p.Corpora, p.Text, want)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	r := p.Resolve()
	if want := []string{filepath.Join(dir, "texts", "a.txt"), "/abs/b.txt"}; !reflect.DeepEqual(r.Corpora, want) {
		t.Errorf("resolved %q, want %q", r.Corpora, want)
	}
	if p.Corpora[0] != "texts/a.txt" {
		t.Errorf("Resolve changed the profile's own list: %q", p.Corpora)
	}
	if got := r.Texts(); !reflect.DeepEqual(got, r.Corpora) {
		t.Errorf("Texts %q", got)
	}
	out := filepath.Join(dir, "saved.toml")
	if err := Save(out, p); err != nil {
		t.Fatal(err)
	}
	q, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	p.Source, q.Source = "", ""
	if !reflect.DeepEqual(p, q) {
		t.Fatalf("round trip changed the profile:\n%+v\n%+v", p, q)
	}
	data, _ := os.ReadFile(out)
	if !strings.Contains(string(data), `corpora = ["texts/a.txt", "/abs/b.txt"]`) {
		t.Errorf("saved profile:\n%s", data)
	}
	b := p
	b.Corpora = []string{"texts/a.txt"}
	if d := Diff(p, b); len(d) != 1 || d[0].Key != "corpora" {
		t.Errorf("Diff = %v, want one corpora change", d)
	}
	if f, ok := FlagFor("corpora"); !ok || f != "perplexity" {
		t.Errorf("FlagFor(corpora) = %q, %v", f, ok)
	}
	// An empty list is no list, as an absent key.
	e, err := Parse("e.toml", []byte("name = \"e\"\ncorpora = []\n"))
	if err != nil || e.Corpora != nil {
		t.Errorf("corpora = []: %v, %#v", err, e.Corpora)
	}
}

// TestCorporaRefused names the key for each wrong corpora setting.
func TestCorporaRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(p *Profile)
		want   string
	}{
		{"beside text", func(p *Profile) { p.Text, p.Corpora = "a.txt", []string{"b.txt", "c.txt"} }, "both text and corpora are set"},
		{"beside tokens", func(p *Profile) { p.Tokens, p.Corpora = "a.json", []string{"b.txt", "c.txt"} }, "both tokens and corpora are set"},
		{"empty entry", func(p *Profile) { p.Corpora = []string{"b.txt", " "} }, "entry 2 is empty"},
		{"too many", func(p *Profile) { p.Corpora = make([]string, maxCorpora+1) }, "at most"},
	} {
		p := Default()
		c.change(&p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), "corpora: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate = %v, want corpora: …%s", c.name, err, c.want)
		}
	}
	for _, src := range []string{"name = \"x\"\ncorpora = \"a.txt\"\n", "name = \"x\"\ncorpora = [1, 2]\n"} {
		_, err := Parse("bad.toml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), "corpora") && !strings.Contains(err.Error(), "array") {
			t.Errorf("%q: Parse = %v, want an error about corpora", src, err)
		}
	}
}

// TestPerplexityRepeated gives --perplexity several times: the texts
// become corpora in order, over a profile's own text or list; once is
// text, as before.
func TestPerplexityRepeated(t *testing.T) {
	wd, _ := os.Getwd()
	parse := func(args ...string) Profile {
		t.Helper()
		var scratch Profile
		fs := pflag.NewFlagSet("score", pflag.ContinueOnError)
		scratch.BindFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		base := Default()
		base.Corpora = []string{"/p/x.txt", "/p/y.txt"}
		got, err := base.Override(fs)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := parse("--perplexity", "a.txt", "--perplexity-ctx", "64", "--perplexity", "b.txt", "--perplexity", "c.txt")
	want := []string{filepath.Join(wd, "a.txt"), filepath.Join(wd, "b.txt"), filepath.Join(wd, "c.txt")}
	if !reflect.DeepEqual(got.Corpora, want) || got.Text != "" || got.Ctx != 64 {
		t.Errorf("three --perplexity: corpora %q text %q ctx %d", got.Corpora, got.Text, got.Ctx)
	}
	if err := got.Validate(); err != nil {
		t.Error(err)
	}
	if one := parse("--perplexity", "a.txt"); one.Text != want[0] || one.Corpora != nil {
		t.Errorf("one --perplexity over a profile's corpora: text %q corpora %q", one.Text, one.Corpora)
	}
	if kept := parse("--perplexity-ctx", "64"); !reflect.DeepEqual(kept.Corpora, []string{"/p/x.txt", "/p/y.txt"}) {
		t.Errorf("the profile's corpora lost: %q", kept.Corpora)
	}
	if tok := parse("--perplexity-tokens", "ids.json"); tok.Corpora != nil || tok.Text != "" {
		t.Errorf("--perplexity-tokens over corpora: %q %q", tok.Corpora, tok.Text)
	}

	// ApplyTo puts a profile's corpora on a bound flag set, in order.
	var into Profile
	fs := pflag.NewFlagSet("score", pflag.ContinueOnError)
	into.BindFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	p := Default()
	p.Corpora = []string{"/p/x.txt", "/p/y.txt"}
	if err := p.ApplyTo(fs); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(into.Corpora, p.Corpora) || into.Text != "" {
		t.Errorf("ApplyTo: corpora %q text %q", into.Corpora, into.Text)
	}
}
