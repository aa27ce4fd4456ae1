package tui

import "testing"

func TestFormat(t *testing.T) {
	cases := map[string]string{
		pm(8.123456, 0.0312):     "8.123 ± 0.031",
		pm(0.00031, 0.0001):      "0.00031 ± 0.00010",
		pm(123.4, 12):            "123 ± 12",
		pm(5, 0):                 "5.0000 ± 0.0000",
		pmSigned(0.02, 0.03):     "+0.020 ± 0.030",
		small(0.000123456):       "0.000123",
		small(1.5):               "1.50",
		clock(0):                 "0:00",
		clock(61_500_000_000):    "1:02",
		clock(3_725_000_000_000): "1:02:05",
		rate(1234.4):             "1234",
		rate(0):                  "–",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if s := fit("abcdef\nx", 4, 3); s != "abc…\nx\n" {
		t.Errorf("fit = %q", s)
	}
}
