package report

import (
	"regexp"
	"strings"
	"unicode"
)

// Text in the Markdown renderings (plans, what-if grids, reports, record
// cards, simulations) may come from a request or an endpoint: a name, a
// URL, a model, a label, a message. Written as it is, it could make a link
// or an image, open HTML, break a table, or carry control characters to
// whoever reads the file in a terminal (docs/security.md, "What a browser
// opens"). mdText makes it inert; mdProse does the same for the engine's
// own sentences.

// linkLike matches what GitHub-flavoured Markdown links without brackets
// (its autolinks: a URL with a scheme, a www. name, an e-mail address,
// with mailto: or xmpp: or without), and any scheme:// besides, up to a
// space, a table's pipe, an angle bracket, a control character or an
// invalid byte.
var linkLike = regexp.MustCompile(`(?i)(?:[a-z][a-z0-9+.-]*://|www\.|(?:mailto:|xmpp:)?[a-z0-9._+-]+@[a-z0-9_-]+\.)[^\s<>|\x00-\x1f\x7f-\x9f\x{fffd}]*`)

// mdText escapes plain text for Markdown: backslashes, brackets and pipes
// so that it cannot make a link or an image ("[x](javascript:...)",
// "![](http://...)") or a table cell, backticks so that it cannot open a
// code span of its own, angle brackets and ampersands so that it cannot
// open HTML, control characters (mdControl), and anything GFM would link
// by itself, which is written as a code span
// ("`http://127.0.0.1:8000/v1`").
func mdText(s string) string { return mdInert(s, true) }

// mdProse is mdText for the engine's sentences (a class's explanation):
// their brackets are their own ("E[S]") and the only text in them from a
// request is names (letters, digits, '.', '_' and '-'), which may still
// look like a www. name. Control characters and what GFM would link are
// escaped as mdText escapes them.
func mdProse(s string) string { return mdInert(s, false) }

func mdInert(s string, markup bool) string {
	var b strings.Builder
	last := 0
	for _, m := range linkLike.FindAllStringIndex(s, -1) {
		end := m[0] + len(trimLinkEnd(s[m[0]:m[1]]))
		mdEscapeTo(&b, s[last:m[0]], markup)
		codeSpan(&b, s[m[0]:end])
		last = end
	}
	mdEscapeTo(&b, s[last:], markup)
	return b.String()
}

// trimLinkEnd drops from the end of a link-like text what GFM leaves out
// of an autolink: trailing punctuation, and a closing parenthesis that
// closes nothing in it.
func trimLinkEnd(t string) string {
	for t != "" {
		c := t[len(t)-1]
		switch {
		case strings.IndexByte("?!.,:;*_~'\"", c) >= 0:
			t = t[:len(t)-1]
		case c == ')' && strings.Count(t, ")") > strings.Count(t, "("):
			t = t[:len(t)-1]
		default:
			return t
		}
	}
	return t
}

// codeSpan writes t as a Markdown code span, shown as written and never a
// link: fenced by one backtick more than its longest run of them.
func codeSpan(b *strings.Builder, t string) {
	run, longest := 0, 0
	for _, c := range t {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	pad := ""
	if strings.HasPrefix(t, "`") || strings.HasSuffix(t, "`") {
		pad = " "
	}
	b.WriteString(fence + pad + t + pad + fence)
}

// mdEscapeTo writes s with its control characters made visible and, with
// markup, its Markdown and HTML characters escaped.
func mdEscapeTo(b *strings.Builder, s string, markup bool) {
	rs := []rune(s)
	for i, r := range rs {
		if emphasis(rs, i) {
			b.WriteByte('\\')
			b.WriteRune(r)
			continue
		}
		if markup {
			switch r {
			case '\\', '[', ']', '|', '`':
				b.WriteByte('\\')
				b.WriteRune(r)
				continue
			case '&':
				b.WriteString("&amp;")
				continue
			case '<':
				b.WriteString("&lt;")
				continue
			case '>':
				b.WriteString("&gt;")
				continue
			}
		}
		b.WriteRune(mdControl(r))
	}
}

// emphasis reports whether rs[i] could open or close emphasis or a
// strikethrough, in a text (a name such as a._b_.c) or in a sentence that
// holds one: any * or ~, and a _ that is not between two letters or
// digits, which CommonMark never reads as emphasis (max_tokens, slo_e2e).
func emphasis(rs []rune, i int) bool {
	switch rs[i] {
	case '*', '~':
		return true
	case '_':
		return i == 0 || i == len(rs)-1 || !alnum(rs[i-1]) || !alnum(rs[i+1])
	}
	return false
}

func alnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// mdControl is what a character becomes in Markdown: a line break, a
// carriage return, a tab and the other separators become a space, so that
// a text stays on its line (a table row, a list item); another C0
// control, such as ESC, its visible picture (␛); DEL ␡; a C1 control or
// an invalid byte the replacement character; anything else itself.
func mdControl(r rune) rune {
	switch {
	case r == '\n', r == '\r', r == '\t', r == '\v', r == '\f', r == 0x85, r == 0x2028, r == 0x2029:
		return ' '
	case r < 0x20:
		return 0x2400 + r
	case r == 0x7f:
		return 0x2421
	case r >= 0x80 && r <= 0x9f:
		return 0xfffd
	}
	return r
}
