package ocitools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/artifact-registry/artifact-registry/internal/testtools"
)

// The S3 server of the object-storage tests is versitygw with its posix
// backend: a real S3 API (multipart uploads with UploadPartCopy, ranged
// and conditional GETs, CopyObject, DeleteObjects, ListObjectsV2,
// ListMultipartUploads) over a directory, one Go program that builds in a
// few minutes and starts in well under a second.
const (
	S3ServerPackage = "github.com/versity/versitygw/cmd/versitygw"
	S3ServerVersion = "v1.8.0"
)

// s3ServerBuildTimeout: a cold build of versitygw (module downloads
// included) is a few minutes of CPU, ten minutes of wall time on two busy
// cores; scripts/ensure-test-tools builds it before the tests
// (EnsureS3Server), and a test building it gets the same bound.
const s3ServerBuildTimeout = 30 * time.Minute

// S3ServerBinary returns the path of the versitygw binary, building it
// when the tool cache lacks it (the test fails when CI=true and it cannot
// be built, and is skipped otherwise).
func S3ServerBinary(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	key := "versitygw@" + S3ServerVersion
	if p, ok := built[key]; ok {
		return p
	}
	p, err := EnsureS3Server()
	if err != nil {
		testtools.Unavailable(t, fmt.Sprintf("cannot fetch/build versitygw %s from the Go module proxy: %v", S3ServerVersion, err))
	}
	built[key] = p
	return p
}

// EnsureS3Server builds versitygw into the tool cache unless it is there,
// and returns its path.
func EnsureS3Server() (string, error) {
	return ensure("versitygw", S3ServerVersion, s3ServerBuildTimeout, installer(S3ServerPackage, S3ServerVersion))
}

// S3Server is a running S3 server with one bucket and one (root) access
// key. Clients sign with AccessKey/SecretKey (region us-east-1,
// path-style addressing).
type S3Server struct {
	Endpoint  string // http://127.0.0.1:<port>
	Bucket    string
	AccessKey string
	SecretKey string
}

// URL is the gocloud s3:// URL of the server's bucket.
func (s *S3Server) URL() string {
	return "s3://" + s.Bucket + "?endpoint=" + s.Endpoint + "&region=us-east-1&use_path_style=true"
}

// SetEnv points the AWS SDK's default credential chain of this process at
// the server's key, and away from any shared AWS configuration (t.Setenv:
// restored after the test; the test cannot be parallel).
func (s *S3Server) SetEnv(t testing.TB) {
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// StartS3 runs an S3 server on a free loopback port with its data in a
// new temporary directory, creates bucket and returns once it serves. The
// server is stopped when the test ends, and killed by the kernel if the
// test process dies first (a timeout's panic runs no cleanup). It starts
// in well under a second, so each test has a server of its own.
func StartS3(t testing.TB, bucket string) *S3Server {
	t.Helper()
	bin := S3ServerBinary(t)
	s, p, err := launchS3(bin, t.TempDir(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	return s
}

// s3StartAttempts: the free port is chosen before the server binds it, so
// another process may take it in between; the server then exits at once
// and is started again on another port.
const s3StartAttempts = 3

// launchS3 starts the server with its buckets under dir/data, waits until
// it serves and creates bucket. On error the process is stopped.
func launchS3(bin, dir, bucket string) (*S3Server, *serverProc, error) {
	root := filepath.Join(dir, "data")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, nil, fmt.Errorf("s3 server: %w", err)
	}
	var err error
	for range s3StartAttempts {
		var s *S3Server
		var p *serverProc
		s, p, err = startS3Once(bin, dir, root)
		if errors.Is(err, errExitedStarting) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = s.createBucket(ctx, bucket)
		cancel()
		if err != nil {
			p.stop()
			return nil, nil, fmt.Errorf("s3 server: create bucket %s: %w", bucket, err)
		}
		s.Bucket = bucket
		return s, p, nil
	}
	return nil, nil, err
}

// startS3Once starts versitygw's posix backend over root on one free
// loopback port, with a root key and no other listener (no admin API,
// WebUI or metrics), and waits until its health endpoint answers.
func startS3Once(bin, dir, root string) (*S3Server, *serverProc, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, nil, fmt.Errorf("s3 server: free port: %w", err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	s := &S3Server{
		Endpoint:  "http://" + addr,
		AccessKey: "artifactregistrytest",
		SecretKey: "artifact-registry-test-secret",
	}
	cmd := exec.Command(bin,
		"--port", addr,
		"--access", s.AccessKey, "--secret", s.SecretKey,
		"--region", "us-east-1",
		"--health", "/health",
		"--quiet",
		"posix", root,
	)
	cmd.Dir = dir
	// No inherited environment: versitygw reads much of its configuration
	// (listeners, keys, event and log sinks) from VGW_* and other variables.
	cmd.Env = []string{"HOME=" + dir, "TMPDIR=" + os.TempDir()}
	// Its own process group, so a stop reaches every child it may start.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := startWithPdeathsig(cmd); err != nil {
		return nil, nil, fmt.Errorf("s3 server: start: %w", err)
	}
	p := &serverProc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	if err := waitHealthy(s.Endpoint+"/health", p.exited); err != nil {
		p.stop()
		return nil, nil, fmt.Errorf("s3 server %s: %w:\n%s", addr, err, logs.tail())
	}
	return s, p, nil
}

var errExitedStarting = errors.New("exited while starting")

// waitHealthy polls url until it answers 200, the process exits or a
// minute has passed.
func waitHealthy(url string, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-exited:
			return errExitedStarting
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("health check: %s", resp.Status)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after a minute (last: %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// client is an S3 client of the server signing with its root key.
func (s *S3Server) client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       "us-east-1",
		UsePathStyle: true,
		Credentials:  aws.CredentialsProviderFunc(s.credentials),
	})
}

func (s *S3Server) credentials(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: s.AccessKey, SecretAccessKey: s.SecretKey}, nil
}

func (s *S3Server) createBucket(ctx context.Context, name string) error {
	_, err := s.client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)})
	return err
}
