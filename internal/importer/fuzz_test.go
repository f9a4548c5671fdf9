package importer

import (
	"encoding/json"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzImport feeds arbitrary bytes to detection and every parser, seeded
// with the real files and truncated copies of them. An import may fail,
// but it must not panic, and what it returns must encode as JSON (no NaN
// or Inf anywhere).
func FuzzImport(f *testing.F) {
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".golden.json") || strings.HasSuffix(path, ".md") {
			return err
		}
		data := readTestdata(f, strings.TrimPrefix(path, "testdata"+string(filepath.Separator)))
		if len(data) > 64<<10 {
			data = data[:64<<10]
		}
		f.Add(data)
		f.Add(data[:len(data)/3])
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range []Options{deadline12s, {}} {
			imp, err := Import("fuzz", data, opts)
			if err != nil {
				if err.Error() == "" {
					t.Fatal("empty error message")
				}
				continue
			}
			if _, err := json.Marshal(imp); err != nil {
				t.Fatalf("result does not encode: %v", err)
			}
			for _, s := range imp.Steps {
				if err := checkStep(s); err != nil {
					t.Fatalf("bad step %+v: %v", s, err)
				}
			}
		}
	})
}
