package config

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/plannerdev/planner/internal/fieldpath"
)

func TestStoreBounds(t *testing.T) {
	cleanEnv(t)
	t.Setenv(EnvPrefix+"_STORE_MAX_DOCUMENT_BYTES", "")
	t.Setenv(EnvPrefix+"_STORE_MAX_BYTES", "")
	cfg, err := Load(serveFlags(t))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Store.MaxDocumentBytes != 512<<10 || cfg.Store.MaxBytes != 0 {
		t.Errorf("defaults: %+v", cfg.Store)
	}
	file := writeFile(t, "store: {max_document_bytes: 131072, max_bytes: 1048576}\n")
	cfg, err = Load(serveFlags(t, "--config", file))
	if err != nil || cfg.Store.MaxDocumentBytes != 131072 || cfg.Store.MaxBytes != 1<<20 {
		t.Errorf("from a file: %+v, %v", cfg.Store, err)
	}
	t.Setenv(EnvPrefix+"_STORE_MAX_BYTES", "2097152")
	cfg, err = Load(serveFlags(t, "--config", file))
	if err != nil || cfg.Store.MaxBytes != 2<<20 {
		t.Errorf("from the environment: %+v, %v", cfg.Store, err)
	}

	for _, tc := range []struct{ yaml, want string }{
		{"store: {max_document_bytes: 1000}\n", "store.max_document_bytes: must be >= 65536"},
		{"store: {max_bytes: 1000}\n", "store.max_bytes: must be >= 1048576"},
		{"store: {max_bytes: 1048576}\n", "store.max_bytes: at least 4 × store.max_document_bytes (2097152): the store keeps room for twice the largest document besides what it holds"},
	} {
		t.Setenv(EnvPrefix+"_STORE_MAX_BYTES", "")
		_, err = Load(serveFlags(t, "--config", writeFile(t, tc.yaml)))
		var ps Problems
		if !errors.As(err, &ps) || !slices.ContainsFunc(ps, func(p fieldpath.Error) bool { return p.Error() == tc.want }) {
			t.Errorf("%s: want %q in %v", tc.yaml, tc.want, err)
		}
	}
}

// TestPostgresDatabase: a postgres:// or postgresql:// db is taken as it
// is, with its lease; a size cap, which only a SQLite file has, is refused
// beside it.
func TestPostgresDatabase(t *testing.T) {
	cleanEnv(t)
	t.Setenv(EnvPrefix+"_STORE_MAX_BYTES", "")
	t.Setenv(EnvPrefix+"_PROBE_LEASE", "")
	cfg, err := Load(serveFlags(t, "--db", "postgresql://planner@db.internal/planner"))
	if err != nil || cfg.DB != "postgresql://planner@db.internal/planner" || cfg.Probe.Lease != DefaultProbeLease {
		t.Fatalf("%+v %v", cfg, err)
	}
	t.Setenv(EnvPrefix+"_DB", "postgres://planner@db.internal/planner")
	t.Setenv(EnvPrefix+"_PROBE_LEASE", "5s")
	cfg, err = Load(serveFlags(t))
	if err != nil || cfg.DB != "postgres://planner@db.internal/planner" || cfg.Probe.Lease != 5*time.Second {
		t.Fatalf("from the environment: %+v %v", cfg, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"db: postgres://planner@db.internal/planner\nstore: {max_bytes: 8388608}\n", "store.max_bytes: applies to a SQLite file; a PostgreSQL database (db) is bounded by its server"},
		{"probe: {lease: 10ms}\n", "probe.lease: must be at least 1s"},
	} {
		t.Setenv(EnvPrefix+"_DB", "")
		t.Setenv(EnvPrefix+"_PROBE_LEASE", "")
		_, err = Load(serveFlags(t, "--config", writeFile(t, tc.yaml)))
		var ps Problems
		if !errors.As(err, &ps) || !slices.ContainsFunc(ps, func(p fieldpath.Error) bool { return p.Error() == tc.want }) {
			t.Errorf("%s: want %q in %v", tc.yaml, tc.want, err)
		}
	}
}
