package probe

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

const (
	// sseBufSize is the read buffer of one stream; chunks are a few hundred
	// bytes, so most lines are returned straight from it.
	sseBufSize = 4 << 10
	// maxEventSize bounds one event's data, so that a runaway stream cannot
	// take the probe's memory.
	maxEventSize = 1 << 20
)

// errEventTooLarge is returned for an event larger than maxEventSize.
var errEventTooLarge = fmt.Errorf("server-sent event larger than %d bytes", maxEventSize)

// sseReader splits a text/event-stream into events. It handles data lines
// (joined with newlines when an event has several), the event field,
// comments, blank-line event ends and the three line endings the format
// allows (CRLF, LF and CR alone); other fields (id, retry) are ignored.
// Its buffers are reused across events and streams.
type sseReader struct {
	br     *bufio.Reader
	base   time.Time     // events are timed from it
	data   []byte        // data of the event being read
	long   []byte        // a line longer than br's buffer
	skipLF bool          // the last line ended with CR: an LF right after it belongs to that ending
	tmpl   chunkTemplate // the stream's chunk template, for its reader (readStream)
}

var sseReaders = sync.Pool{New: func() any {
	return &sseReader{br: bufio.NewReaderSize(nil, sseBufSize), data: make([]byte, 0, 512)}
}}

// newSSEReader takes a reader from the pool, its events timed from base;
// put it back with release.
func newSSEReader(r io.Reader, base time.Time) *sseReader {
	s := sseReaders.Get().(*sseReader)
	s.br.Reset(r)
	s.base = base
	return s
}

// release returns the reader to the pool; it must not be used afterwards.
func (s *sseReader) release() {
	s.br.Reset(nil)
	s.data, s.long, s.skipLF = s.data[:0], s.long[:0], false
	s.tmpl.ok = false
	sseReaders.Put(s)
}

// event is one dispatched server-sent event. data is valid until the next
// call of next.
type event struct {
	data    []byte
	isError bool          // the event field was "error"
	at      time.Duration // when the event's first data line was read, from the reader's base
}

// next returns the next event with data. At the end of the stream it
// dispatches an event whose blank line is missing, then returns io.EOF; a
// read error is returned as is.
func (s *sseReader) next() (event, error) {
	if !s.skipLF {
		buf, err := s.fill()
		if err != nil {
			return event{}, err
		}
		if data, n, ok := quickEvent(buf); ok {
			// Discarding leaves the bytes where they are until the next
			// read, which comes with the next call.
			_, _ = s.br.Discard(n)
			return event{data: data, at: time.Since(s.base)}, nil
		}
	}
	var ev event
	s.data = s.data[:0]
	hasData := false
	for {
		line, err := s.line()
		if err != nil {
			if errors.Is(err, io.EOF) && hasData {
				ev.data = s.data
				return ev, nil
			}
			return event{}, err
		}
		if len(line) == 0 {
			if hasData {
				ev.data = s.data
				return ev, nil
			}
			ev.isError = false
			continue
		}
		if line[0] == ':' {
			continue // comment
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if len(s.data)+len(value)+1 > maxEventSize {
				return event{}, errEventTooLarge
			}
			if hasData {
				s.data = append(s.data, '\n')
			} else {
				ev.at = time.Since(s.base) // one monotonic clock read
				hasData = true
			}
			s.data = append(s.data, value...)
		case "event":
			ev.isError = string(value) == "error"
		}
	}
}

// quickEvent reads an event from the start of buf when it is there whole
// in the form nearly every stream has: one data line ended by LF, and the
// blank line. It returns the event's data, in buf, and the bytes it
// takes; false for anything else, which next reads line by line.
func quickEvent(buf []byte) (data []byte, n int, ok bool) {
	const field = "data:"
	if len(buf) < len(field) || string(buf[:len(field)]) != field {
		return nil, 0, false
	}
	i := bytes.IndexByte(buf, '\n')
	if i < 0 || i+1 >= len(buf) || buf[i+1] != '\n' || bytes.IndexByte(buf[:i], '\r') >= 0 {
		return nil, 0, false
	}
	data = buf[len(field):i]
	if len(data) > 0 && data[0] == ' ' {
		data = data[1:]
	}
	return data, i + 2, true
}

// line reads one line without its line ending (CRLF, LF or CR). A last
// line without an ending is returned before io.EOF. The line is valid
// until the next read. A CR is a whole line ending at once, so that an
// event ended by CRs is dispatched without waiting for a byte that may
// never come; an LF that then follows it is skipped.
func (s *sseReader) line() ([]byte, error) {
	s.long = s.long[:0]
	for {
		buf, err := s.fill()
		if err != nil {
			if errors.Is(err, io.EOF) && len(s.long) > 0 {
				return s.long, nil
			}
			return nil, err
		}
		if s.skipLF {
			s.skipLF = false
			if buf[0] == '\n' {
				_, _ = s.br.Discard(1)
				continue
			}
		}
		i := lineEnd(buf)
		if i < 0 {
			if len(s.long)+len(buf) > maxEventSize {
				return nil, errEventTooLarge
			}
			s.long = append(s.long, buf...)
			_, _ = s.br.Discard(len(buf))
			continue
		}
		line := buf[:i]
		if len(s.long) > 0 {
			if len(s.long)+i > maxEventSize {
				return nil, errEventTooLarge
			}
			s.long = append(s.long, line...)
			line = s.long
		}
		s.skipLF = buf[i] == '\r'
		_, _ = s.br.Discard(i + 1)
		return line, nil
	}
}

// lineEnd is the index of the first CR or LF in b, or -1: two searches
// for one byte each, which are much faster than a search for either.
func lineEnd(b []byte) int {
	end := len(b)
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		end = i
	}
	if i := bytes.IndexByte(b[:end], '\r'); i >= 0 {
		return i
	}
	if end == len(b) {
		return -1
	}
	return end
}

// fill returns the bytes buffered, reading more when there are none.
func (s *sseReader) fill() ([]byte, error) {
	if s.br.Buffered() == 0 {
		if _, err := s.br.Peek(1); err != nil {
			return nil, err
		}
	}
	return s.br.Peek(s.br.Buffered())
}
