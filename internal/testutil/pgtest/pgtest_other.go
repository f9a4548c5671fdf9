//go:build !linux

package pgtest

import (
	"os"
	"testing"
)

// Main runs the package's tests.
func Main(m *testing.M) int { return m.Run() }

// DSN skips the test: the server is started on Linux only.
func DSN(t testing.TB) string {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("the tests start PostgreSQL on Linux only (%s=1)", RequireEnv)
	}
	t.Skip("the tests start PostgreSQL on Linux only")
	return ""
}
