package profiles

// Locating keys in profile text, so errors about unknown keys can name the
// line: the toml library keeps key positions private.

import (
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// keyLine returns the 1-based line where key k is set or its table opens,
// or 0 when it cannot be found (a key inside a multi-line value, say).
func keyLine(data string, k toml.Key) int {
	var table []string
	for i, line := range strings.Split(data, "\n") {
		s := strings.TrimSpace(line)
		if s == "" || s[0] == '#' {
			continue
		}
		if s[0] == '[' {
			h := strings.TrimLeft(s, "[")
			keys, rest, ok := parseKey(h)
			if !ok || !strings.HasPrefix(strings.TrimSpace(rest), "]") {
				continue
			}
			table = keys
			if hasPrefix(table, k) {
				return i + 1
			}
			continue
		}
		keys, rest, ok := parseKey(s)
		if !ok || !strings.HasPrefix(strings.TrimSpace(rest), "=") {
			continue
		}
		full := append(slices.Clone(table), keys...)
		if hasPrefix(full, k) {
			return i + 1
		}
	}
	return 0
}

// hasPrefix reports whether full starts with k.
func hasPrefix(full []string, k []string) bool {
	return len(full) >= len(k) && slices.Equal(full[:len(k)], k)
}

// parseKey parses a dotted TOML key at the start of s and returns its parts
// and the text after it.
func parseKey(s string) (keys []string, rest string, ok bool) {
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, "", false
		}
		var part string
		switch s[0] {
		case '"':
			end := 1
			var b strings.Builder
			for end < len(s) && s[end] != '"' {
				if s[end] == '\\' && end+1 < len(s) {
					end++
				}
				b.WriteByte(s[end])
				end++
			}
			if end >= len(s) {
				return nil, "", false
			}
			part, s = b.String(), s[end+1:]
		case '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return nil, "", false
			}
			part, s = s[1:1+end], s[2+end:]
		default:
			end := 0
			for end < len(s) && isBare(s[end]) {
				end++
			}
			if end == 0 {
				return nil, "", false
			}
			part, s = s[:end], s[end:]
		}
		keys = append(keys, part)
		s = strings.TrimLeft(s, " \t")
		if s == "" || s[0] != '.' {
			return keys, s, true
		}
		s = s[1:]
	}
}

func isBare(c byte) bool {
	return c == '_' || c == '-' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}
