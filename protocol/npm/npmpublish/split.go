package npmpublish

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// A publish body is a JSON document of a few kilobytes around one huge
// string: the tarball in base64 (_attachments.<file>.data). Decoding it
// whole held the body, the decoded document and the decoded tarball at
// once (three copies of the tarball). Split reads the body once:
// the document goes to a bounded buffer with the data string replaced by
// "", and the data string streams to a reader of its own while it is read,
// which the caller decodes from base64 into the blob upload.

// MaxJSONDepth is encoding/json's own nesting limit, enforced here too so
// that the recursive copy cannot be driven arbitrarily deep.
const MaxJSONDepth = 10000

// splitter copies a JSON document from br into out, except the one data
// string it hands to onData.
type splitter struct {
	br       *bufio.Reader
	out      []byte
	limit    int
	onData   func(file string, data io.Reader) error
	streamed bool
	depth    int
}

// member kinds: where an object sits in the publish document.
type objectKind int

const (
	kindOther       objectKind = iota
	kindTop                    // the document
	kindAttachments            // _attachments
	kindAttachment             // _attachments.<file>
)

// Split reads the publish document r and returns it without the
// tarball: each "data" string member of an "_attachments" member object
// of the top-level object is replaced by "" and given to onData as the
// reader of its unescaped contents, to read to the end before returning.
// At most one data string is allowed. The rest may take metaLimit bytes
// (an *Error TooLarge past it). Syntax errors are *Errors; onData's and
// r's errors are returned as they are.
func Split(r io.Reader, metaLimit int, onData func(file string, data io.Reader) error) ([]byte, error) {
	s := &splitter{br: bufio.NewReaderSize(r, 64<<10), limit: metaLimit, onData: onData}
	c, err := s.next()
	if err != nil {
		return nil, err
	}
	if c != '{' {
		return nil, malformed("the document is not a JSON object")
	}
	if err := s.object(kindTop, ""); err != nil {
		return nil, err
	}
	if _, err := s.next(); err != io.ErrUnexpectedEOF {
		if err != nil {
			return nil, err
		}
		return nil, malformed("data after the JSON object")
	}
	return s.out, nil
}

func (s *splitter) emit(b ...byte) error {
	if len(s.out)+len(b) > s.limit {
		return tooLarge("the publish document without its tarball is larger than this registry's limit of %d bytes", s.limit)
	}
	s.out = append(s.out, b...)
	return nil
}

// readByte is ReadByte with the end of the body as an unexpected end.
func (s *splitter) readByte() (byte, error) {
	c, err := s.br.ReadByte()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return c, err
}

// next consumes whitespace and returns the next byte.
func (s *splitter) next() (byte, error) {
	for {
		c, err := s.readByte()
		if err != nil {
			return 0, err
		}
		if !isSpace(c) {
			return c, nil
		}
	}
}

// buffered returns the buffered bytes, reading more when there are none.
func (s *splitter) buffered() ([]byte, error) {
	if s.br.Buffered() == 0 {
		if _, err := s.br.Peek(1); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return s.br.Peek(s.br.Buffered())
}

// stringSpecial is the index of the first byte that ends a run of plain
// string bytes: a quote, a backslash or a control character; -1 if none.
func stringSpecial(b []byte) int {
	for i, c := range b {
		if c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return -1
}

// object copies the members of an object whose '{' was read.
func (s *splitter) object(kind objectKind, file string) error {
	if s.depth++; s.depth > MaxJSONDepth {
		return malformed("nested too deeply")
	}
	defer func() { s.depth-- }()
	if err := s.emit('{'); err != nil {
		return err
	}
	c, err := s.next()
	if err != nil {
		return err
	}
	if c == '}' {
		return s.emit('}')
	}
	seenAttachments := false
	var files map[string]bool // the members of an _attachments object
	if kind == kindAttachments {
		files = map[string]bool{}
	}
	for {
		if c != '"' {
			return malformed("an object key must be a string")
		}
		start := len(s.out)
		if err := s.copyString(); err != nil {
			return err
		}
		key := keyName(s.out[start:])
		if c, err = s.next(); err != nil {
			return err
		}
		if c != ':' {
			return malformed("missing ':' after an object key")
		}
		if err := s.emit(':'); err != nil {
			return err
		}
		if c, err = s.next(); err != nil {
			return err
		}
		switch {
		case kind == kindTop && key == "_attachments":
			if seenAttachments {
				return malformed("two _attachments members")
			}
			seenAttachments = true
			err = s.valueIn(c, kindAttachments, "")
		case kind == kindAttachments:
			// A file named twice is ambiguous: the data streamed from the
			// first, the document decodes to the last.
			if files[key] {
				return malformed(fmt.Sprintf("the attachment %q is named twice", key))
			}
			files[key] = true
			err = s.valueIn(c, kindAttachment, key)
		case kind == kindAttachment && key == "data" && c == '"':
			err = s.data(file)
		default:
			err = s.value(c)
		}
		if err != nil {
			return err
		}
		if c, err = s.next(); err != nil {
			return err
		}
		switch c {
		case '}':
			return s.emit('}')
		case ',':
			if err := s.emit(','); err != nil {
				return err
			}
		default:
			return malformed("missing ',' or '}' in an object")
		}
		if c, err = s.next(); err != nil {
			return err
		}
	}
}

// keyName is the value of a quoted key (the raw bytes when it does not
// decode: the document fails to decode later anyway).
func keyName(quoted []byte) string {
	if bytes.IndexByte(quoted, '\\') < 0 {
		return string(quoted[1 : len(quoted)-1])
	}
	var k string
	if json.Unmarshal(quoted, &k) != nil {
		return string(quoted)
	}
	return k
}

// valueIn copies a value whose first byte is c; an object is of kind.
func (s *splitter) valueIn(c byte, kind objectKind, file string) error {
	if c == '{' {
		return s.object(kind, file)
	}
	return s.value(c)
}

// value copies a value whose first byte c was read. Literals are copied
// up to their delimiter; the decoder of the result checks them.
func (s *splitter) value(c byte) error {
	switch c {
	case '{':
		return s.object(kindOther, "")
	case '[':
		return s.array()
	case '"':
		return s.copyString()
	case '}', ']', ',', ':':
		return malformed("a value is missing")
	}
	if err := s.emit(c); err != nil {
		return err
	}
	for {
		c, err := s.readByte()
		if err != nil {
			return err
		}
		if c == ',' || c == '}' || c == ']' || c == ':' || isSpace(c) {
			return s.br.UnreadByte()
		}
		if err := s.emit(c); err != nil {
			return err
		}
	}
}

func (s *splitter) array() error {
	if s.depth++; s.depth > MaxJSONDepth {
		return malformed("nested too deeply")
	}
	defer func() { s.depth-- }()
	if err := s.emit('['); err != nil {
		return err
	}
	c, err := s.next()
	if err != nil {
		return err
	}
	if c == ']' {
		return s.emit(']')
	}
	for {
		if err := s.value(c); err != nil {
			return err
		}
		if c, err = s.next(); err != nil {
			return err
		}
		switch c {
		case ']':
			return s.emit(']')
		case ',':
			if err := s.emit(','); err != nil {
				return err
			}
		default:
			return malformed("missing ',' or ']' in an array")
		}
		if c, err = s.next(); err != nil {
			return err
		}
	}
}

// copyString copies a string whose opening quote was read, escapes as
// they are.
func (s *splitter) copyString() error {
	if err := s.emit('"'); err != nil {
		return err
	}
	for {
		buf, err := s.buffered()
		if err != nil {
			return err
		}
		i := stringSpecial(buf)
		if i < 0 {
			i = len(buf)
		}
		if err := s.emit(buf[:i]...); err != nil {
			return err
		}
		_, _ = s.br.Discard(i)
		if i == len(buf) {
			continue
		}
		c, _ := s.br.ReadByte()
		switch {
		case c == '"':
			return s.emit('"')
		case c < 0x20:
			return malformed("a control character in a string")
		}
		e, err := s.readByte() // the escaped character; \uXXXX's digits follow as plain bytes
		if err != nil {
			return err
		}
		if err := s.emit('\\', e); err != nil {
			return err
		}
	}
}

// data hands the data string, whose opening quote was read, to onData
// and writes "" in its place.
func (s *splitter) data(file string) error {
	if s.streamed {
		return refuse("a publish carries exactly one attachment")
	}
	s.streamed = true
	if err := s.emit('"', '"'); err != nil {
		return err
	}
	sr := &stringReader{s: s}
	if err := s.onData(file, sr); err != nil {
		return err
	}
	if !sr.done {
		if _, err := io.Copy(io.Discard, sr); err != nil {
			return err
		}
	}
	return nil
}

// errNotBase64 is a data string with an escaped character that no
// base64 text has.
var errNotBase64 = errors.New("npm: escaped non-ASCII character in the attachment's data")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// stringReader reads the unescaped contents of the string being split,
// up to its closing quote (io.EOF).
type stringReader struct {
	s    *splitter
	done bool
	err  error
}

func (r *stringReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && !r.done && r.err == nil {
		if n > 0 && r.s.br.Buffered() == 0 {
			break // return what we have rather than wait for the network
		}
		buf, err := r.s.buffered()
		if err != nil {
			r.err = err
			break
		}
		buf = buf[:min(len(buf), len(p)-n)] // scan only what fits: reads may be small
		i := stringSpecial(buf)
		if i != 0 {
			if i < 0 {
				i = len(buf)
			}
			m := copy(p[n:], buf[:i])
			_, _ = r.s.br.Discard(m)
			n += m
			continue
		}
		var c byte
		c, r.err = r.unescape()
		if r.err == nil && !r.done {
			p[n] = c
			n++
		}
	}
	switch {
	case r.err != nil:
		return n, r.err
	case r.done:
		return n, io.EOF
	}
	return n, nil
}

// unescape reads the special byte at the head of the buffer: the closing
// quote (done), or an escape whose character it returns.
func (r *stringReader) unescape() (byte, error) {
	c, _ := r.s.br.ReadByte()
	switch {
	case c == '"':
		r.done = true
		return 0, nil
	case c < 0x20:
		return 0, malformed("a control character in a string")
	}
	e, err := r.s.readByte()
	if err != nil {
		return 0, err
	}
	switch e {
	case '"', '\\', '/':
		return e, nil
	case 'b':
		return '\b', nil
	case 'f':
		return '\f', nil
	case 'n':
		return '\n', nil
	case 'r':
		return '\r', nil
	case 't':
		return '\t', nil
	case 'u':
		var hex [4]byte
		if _, err := io.ReadFull(r.s.br, hex[:]); err != nil {
			return 0, io.ErrUnexpectedEOF
		}
		v, ok := hex4(hex[:], 0)
		switch {
		case !ok:
			return 0, malformed(`invalid \u escape in a string`)
		case v >= utf8.RuneSelf || v == 0:
			return 0, errNotBase64
		}
		return byte(v), nil
	}
	return 0, malformed("invalid escape in a string")
}
