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
// comments, blank-line event ends and CRLF line endings; other fields (id,
// retry) are ignored. Its buffers are reused across events and streams.
type sseReader struct {
	br   *bufio.Reader
	data []byte // data of the event being read
	long []byte // a line longer than br's buffer
}

var sseReaders = sync.Pool{New: func() any {
	return &sseReader{br: bufio.NewReaderSize(nil, sseBufSize), data: make([]byte, 0, 512)}
}}

// newSSEReader takes a reader from the pool; put it back with release.
func newSSEReader(r io.Reader) *sseReader {
	s := sseReaders.Get().(*sseReader)
	s.br.Reset(r)
	return s
}

// release returns the reader to the pool; it must not be used afterwards.
func (s *sseReader) release() {
	s.br.Reset(nil)
	s.data, s.long = s.data[:0], s.long[:0]
	sseReaders.Put(s)
}

// event is one dispatched server-sent event. data is valid until the next
// call of next.
type event struct {
	data    []byte
	isError bool      // the event field was "error"
	at      time.Time // when the event's first data line was read
}

// next returns the next event with data. At the end of the stream it
// dispatches an event whose blank line is missing, then returns io.EOF; a
// read error is returned as is.
func (s *sseReader) next() (event, error) {
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
				ev.at = time.Now()
				hasData = true
			}
			s.data = append(s.data, value...)
		case "event":
			ev.isError = string(value) == "error"
		}
	}
}

// line reads one line without its line ending (LF or CRLF). A last line
// without an ending is returned before io.EOF.
func (s *sseReader) line() ([]byte, error) {
	b, err := s.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		s.long = append(s.long[:0], b...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(s.long) > maxEventSize {
				return nil, errEventTooLarge
			}
			b, err = s.br.ReadSlice('\n')
			s.long = append(s.long, b...)
		}
		b = s.long
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(b) > 0) {
		return nil, err
	}
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b, nil
}
