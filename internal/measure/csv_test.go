package measure

import (
	"bytes"
	"strings"
	"testing"
)

func TestCSVRoundTrip(t *testing.T) {
	in := []Record{
		{Step: 4, Index: 7, StartS: 1.25, AckMs: 10, TTFTMs: 201.5, E2EMs: 1200.25, E2EWithRetriesMs: 1200.25, OutputTokens: 50, InputTokens: 512, Status: 200, Attempts: 1, OK: true},
		{Step: 8, Index: 0, StartS: 3, E2EMs: 12, E2EWithRetriesMs: 1530, Status: 429, ErrorClass: ErrRateLimited, Attempts: 2, RetryAfterMs: 1500, OutputEstimated: true, Warmup: true},
		{Step: 4, RateRPS: 2.5, Index: 3, StartS: 7.123456789, TTFTMs: 0.123456, E2EMs: 2, E2EWithRetriesMs: 2, OutputTokens: 2, Status: 200, Attempts: 1, OK: true},
		{Step: 12, Index: 1, StartS: 9, TTFTMs: 50, E2EMs: 120, E2EWithRetriesMs: 120, OutputTokens: 8, Status: 200, Attempts: 1, OK: true, Refine: true},
		{Step: 2, Index: 5, StartS: 11, TTFTMs: 40, E2EMs: 90, E2EWithRetriesMs: 90, OutputTokens: 8, Status: 200, Attempts: 1, OK: true,
			ServedModel: "gpt-4o-2024-08-06", Conn: ConnNew, ConnWaitMs: 31.25, DNSMs: 1.5, ConnectMs: 4.75, TLSMs: 24.5, TTFBMs: 38.125},
		{Step: 2, Index: 6, StartS: 12, TTFTMs: 30, E2EMs: 80, E2EWithRetriesMs: 80, OutputTokens: 8, Status: 200, Attempts: 1, OK: true,
			ServedModel: "a, b|c", Conn: ConnReused, ConnWaitMs: 0.001, TTFBMs: 12.5},
		{Step: 1, Index: 9, StartS: 13, TTFTMs: 30, E2EMs: 80, E2EWithRetriesMs: 80, OutputTokens: 8, InputTokens: 2048, Status: 200, Attempts: 1, OK: true,
			CachedTokens: 1920, PrefixTokens: 1984, Task: 3, Call: 2},
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, in); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), ",1530.000000,2,0,false,,,") {
		t.Errorf("the 429 row lacks e2e_with_retries_ms and n429:\n%s", buf.String())
	}
	out, err := ReadCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("read %d records, want %d", len(out), len(in))
	}
	for i := range in {
		if in[i] != out[i] {
			t.Errorf("record %d: wrote %+v, read %+v", i, in[i], out[i])
		}
	}
	if _, err := ReadCSV(bytes.NewBufferString("a,b\n1,2\n")); err == nil {
		t.Error("a foreign CSV was read as a probe CSV")
	}
}

// TestCSVReadsTheOldLayouts keeps files written before the retry columns
// readable (their E2E counts as the time with retries), and those written
// before the served model and connection columns (those fields empty).
func TestCSVReadsTheOldLayouts(t *testing.T) {
	old := strings.Join(csvHeaderV1, ",") + "\n4,7,1.250000,10.000,201.500,1200.250,50,512,false,200,,2,300.000,true,false\n"
	out, err := ReadCSV(strings.NewReader(old))
	if err != nil || len(out) != 1 {
		t.Fatalf("%v, %v", out, err)
	}
	if r := out[0]; r.E2EMs != 1200.25 || r.SlotMs() != 1200.25 || r.RateLimitedAnswers() != 1 {
		t.Errorf("record %+v", r)
	}
	v2 := strings.Join(csvHeaderV2, ",") + "\n4,7,1.250000,10.000,201.500,1200.250,50,512,false,200,,2,300.000,true,false,1500.000,1,0.5,true\n"
	out, err = ReadCSV(strings.NewReader(v2))
	if err != nil || len(out) != 1 {
		t.Fatalf("%v, %v", out, err)
	}
	want := Record{Step: 4, Index: 7, StartS: 1.25, AckMs: 10, TTFTMs: 201.5, E2EMs: 1200.25, OutputTokens: 50, InputTokens: 512,
		Status: 200, Attempts: 2, RetryAfterMs: 300, OK: true, E2EWithRetriesMs: 1500, RateRPS: 0.5, Refine: true}
	if out[0] != want {
		t.Errorf("record %+v, want %+v", out[0], want)
	}
	for _, bad := range []struct {
		header         []string
		row, complaint string
	}{
		{csvHeaderV2, "4,7,1.250000,10.000,201.500,1200.250,50,512,false,200,,2,300.000,true,false,1500.000,5,0,false", "n429"},
		{csvHeaderV3, "4,7,1.250000,10.000,201.500,1200.250,50,512,false,200,,1,0,true,false,1200.25,0,0,false,m,kept,0,0,0,0,0", "conn"},
		{csvHeaderV3, "4,7,1.250000,10.000,201.500,1200.250,50,512,false,200,,1,0,true,false,1200.25,0,0,false,m,new,x,0,0,0,0", "conn_wait_ms"},
		{CSVHeader, "4,7,1.250000,10.000,201.500,1200.250,50,512,false,200,,1,0,true,false,1200.25,0,0,false,m,new,0,0,0,0,0,-5,0,0,0", "cached_tokens"},
		{CSVHeader, "4,7,1.250000,10.000,201.500,1200.250,50,512,false,200,,1,0,true,false,1200.25,0,0,false,m,new,0,0,0,0,0,0,0,one,0", "task"},
	} {
		text := strings.Join(bad.header, ",") + "\n" + bad.row + "\n"
		if _, err := ReadCSV(strings.NewReader(text)); err == nil || !strings.Contains(err.Error(), bad.complaint) {
			t.Errorf("%s: read, or refused without naming %s: %v", bad.row, bad.complaint, err)
		}
	}
}

// TestCSVReadsTheLayoutBeforeTheCacheColumns: a file written before the
// prompt cache and conversation columns reads with those fields 0, its
// served model and connection columns kept.
func TestCSVReadsTheLayoutBeforeTheCacheColumns(t *testing.T) {
	v3 := strings.Join(csvHeaderV3, ",") + "\n2,5,11.000000000,0,40,90,8,512,false,200,,1,0,true,false,90,0,0,false,gpt-4o,new,31.25,1.5,4.75,24.5,38.125\n"
	out, err := ReadCSV(strings.NewReader(v3))
	if err != nil || len(out) != 1 {
		t.Fatalf("%v, %v", out, err)
	}
	want := Record{Step: 2, Index: 5, StartS: 11, TTFTMs: 40, E2EMs: 90, E2EWithRetriesMs: 90, OutputTokens: 8, InputTokens: 512,
		Status: 200, Attempts: 1, OK: true, ServedModel: "gpt-4o", Conn: ConnNew, ConnWaitMs: 31.25, DNSMs: 1.5, ConnectMs: 4.75, TLSMs: 24.5, TTFBMs: 38.125}
	if out[0] != want {
		t.Errorf("record %+v, want %+v", out[0], want)
	}
}
