//go:build linux

// Package pgtest gives a package's tests a real PostgreSQL server, never a
// mock: the first test that asks for a database starts one (initdb in a
// temporary directory, run as an unprivileged user, listening on a free
// loopback port), every test gets a database of its own on it, and Main
// stops it once the package's tests are done.
//
// Without PostgreSQL's programs on the machine the tests that need it
// skip, saying how to run them, unless PLANNER_REQUIRE_POSTGRES=1 (as in
// .ci/run), which makes the skip a failure.
package pgtest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// user and startTimeout of the server.
const (
	dbUser       = "planner"
	startTimeout = 60 * time.Second
)

var (
	once    sync.Once
	srv     *server
	errSkip error // why the tests skip
	errFail error // why the server could not start
	dbs     atomic.Int64
)

// server is a running postgres.
type server struct {
	dir   string
	port  int
	cmd   *exec.Cmd
	ended chan error
}

// Main runs the package's tests and stops the server if a test started
// one: call it from TestMain, os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if srv != nil {
		srv.stop()
	}
	return code
}

// DSN returns the URL of a new, empty database of its own for the test,
// dropped when the test ends. It skips the test when PostgreSQL is not
// installed (fails under PLANNER_REQUIRE_POSTGRES=1).
func DSN(t testing.TB) string {
	t.Helper()
	once.Do(func() { srv, errSkip, errFail = start() })
	switch {
	case errSkip != nil && os.Getenv(RequireEnv) == "1":
		t.Fatalf("%v (%s=1)", errSkip, RequireEnv)
	case errSkip != nil:
		t.Skip(errSkip)
	case errFail != nil:
		t.Fatal(errFail)
	}
	name := fmt.Sprintf("test%d", dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	return srv.url(name)
}

func (s *server) url(database string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", dbUser, s.port, database)
}

// exec runs one statement in the server's postgres database.
func (s *server) exec(ctx context.Context, stmt string) error {
	conn, err := pgx.Connect(ctx, s.url("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, stmt)
	return err
}

// binDir finds initdb and postgres.
func binDir() (string, error) {
	var dirs []string
	if d := os.Getenv(BinEnv); d != "" {
		dirs = append(dirs, d)
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dirs = append(dirs, strings.TrimSpace(string(out)))
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(debian, func(a, b string) int { return version(b) - version(a) })
	dirs = append(dirs, debian...)
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", fmt.Errorf("PostgreSQL is not installed (no initdb and postgres in $%s, pg_config --bindir or "+
		"/usr/lib/postgresql/*/bin): install it (Debian: apt-get install postgresql, as .ci/run does) to run this test", BinEnv)
}

// version is N of /usr/lib/postgresql/N/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// start creates a cluster in a temporary directory and starts its server.
// PostgreSQL refuses to run as root: as root, the cluster belongs to the
// user nobody and the programs run as that user.
func start() (_ *server, skip, fail error) {
	bin, err := binDir()
	if err != nil {
		return nil, err, nil
	}
	dir, err := os.MkdirTemp("", "planner-pg-")
	if err != nil {
		return nil, nil, err
	}
	s := &server{dir: dir, ended: make(chan error, 1)}
	fail = s.boot(bin)
	if fail != nil {
		s.stop()
		return nil, nil, fmt.Errorf("start PostgreSQL of %s: %w", bin, fail)
	}
	return s, nil, nil
}

func (s *server) boot(bin string) error {
	cred, err := credential()
	if err != nil {
		return err
	}
	data := filepath.Join(s.dir, "data")
	if err := os.Mkdir(data, 0o700); err != nil {
		return err
	}
	if cred != nil {
		if err := os.Chmod(s.dir, 0o755); err != nil {
			return err
		}
		if err := os.Chown(data, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", dbUser, "--auth=trust", "-E", "UTF8",
		"--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	s.port = port
	// Durability of the server itself is not under test: the tests kill
	// planner, never postgres.
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "fsync=off",
		"-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=300",
		"-c", "shared_buffers=32MB", "-c", "log_min_messages=warning")
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	logs, err := s.cmd.StderrPipe()
	if err != nil {
		return err
	}
	started := make(chan error, 1)
	// Pdeathsig follows the thread that started the server: a locked
	// thread lives as long as the server, which dies with the tests.
	go func() {
		runtime.LockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.ended <- s.cmd.Wait()
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	ready := make(chan struct{})
	var lines []string
	var mu sync.Mutex
	go func() {
		sc := bufio.NewScanner(logs)
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			if strings.Contains(sc.Text(), "ready to accept connections") {
				close(ready)
				break
			}
		}
		_, _ = io.Copy(io.Discard, logs)
	}()
	select {
	case <-ready:
		return nil
	case err := <-s.ended:
		s.cmd = nil
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("postgres ended: %v\n%s", err, strings.Join(lines, "\n"))
	case <-time.After(startTimeout):
		return errors.New("postgres did not become ready")
	}
}

// credential is the user the server runs as: nil for the current one,
// nobody when that is root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL needs another user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// freePort is a loopback port that nothing listens on now.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// stop shuts the server down (fast shutdown) and removes its directory.
func (s *server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.ended:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.ended
		}
	}
	_ = os.RemoveAll(s.dir)
}
