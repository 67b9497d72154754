package docker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// The images every run uses. They are built locally by BuildImages (`make images`) and
// never pulled: the machine has no registry.
const (
	// ImageFenceline is the fenceline binary FROM scratch: nodes and the event source.
	ImageFenceline = "fenceline:dev"
	// ImageToxiproxy is the toxiproxy server FROM scratch, serving on 0.0.0.0.
	ImageToxiproxy = "fenceline-toxiproxy:dev"
	// ImageRedis is Debian's redis-server and its libraries FROM scratch, AOF on by default.
	ImageRedis = "fenceline-redis:dev"
)

// Images lists the three images.
var Images = []string{ImageFenceline, ImageToxiproxy, ImageRedis}

// LabelInputs is the image label that holds the content hash of the image's build
// context. BuildImages skips an image whose label matches.
const LabelInputs = "fenceline.inputs"

//go:embed images/*.Dockerfile
var dockerfiles embed.FS

// recipe is bumped when the way contexts are assembled changes without their content
// changing; it is part of every hash.
const recipe = "1"

// BuildOptions configure BuildImages.
type BuildOptions struct {
	// ModuleDir is the root of the fenceline module (the directory of go.mod). Default:
	// found with `go env GOMOD` from the working directory.
	ModuleDir string
	// BuildDir receives the build contexts. Default: ModuleDir/docker/build (git-ignored).
	BuildDir string
	// RedisServer is the redis-server copied into the Redis image. Default:
	// redis-server from PATH (Debian's package).
	RedisServer string
	// Postgres also builds ImagePostgres (PostgreSQL 15 from Debian's postgresql
	// package, found as internal/pgserver finds it), for --store postgres. Default false.
	Postgres bool
	// Etcd also builds ImageEtcd (Debian's etcd from PATH), for the targets that elect
	// through etcd. Default false.
	Etcd bool
	// Force builds every image even when its inputs did not change.
	Force bool
	// BuildLog receives the Docker build output. Default: discard.
	BuildLog io.Writer
	// Logger receives one event per image. Default: discard.
	Logger *slog.Logger
}

// ImageResult says what BuildImages did for one image.
type ImageResult struct {
	Image string
	// Hash is the content hash of the build context (the image's LabelInputs).
	Hash string
	// Built is false when the image with the same hash already existed.
	Built bool
	// Took is the time spent on this image, binaries included.
	Took time.Duration
}

// ErrRedisNotInstalled is returned by BuildImages when no redis-server binary is found.
var ErrRedisNotInstalled = errors.New("docker: redis-server not found (install Debian's redis-server: make check-deps)")

// BuildImages builds the three images from this checkout: the static fenceline and
// toxiproxy binaries (go build, CGO_ENABLED=0) and Debian's redis-server with its
// libraries, each FROM scratch, with Docker's classic builder; with opts.Postgres also
// ImagePostgres, with opts.Etcd ImageEtcd. Nothing is pulled. An
// image whose build context hashes to the value of its LabelInputs label is not built
// again, so a second call with nothing changed costs the two cached `go build`s and a
// hash. It blocks until all three are done; concurrent calls (from several processes)
// are serialized by a lock file in BuildDir.
func BuildImages(ctx context.Context, opts BuildOptions) ([]ImageResult, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.BuildLog == nil {
		opts.BuildLog = io.Discard
	}
	if opts.ModuleDir == "" {
		dir, err := moduleDir(ctx)
		if err != nil {
			return nil, err
		}
		opts.ModuleDir = dir
	}
	if opts.BuildDir == "" {
		opts.BuildDir = filepath.Join(opts.ModuleDir, "docker", "build")
	}
	if opts.RedisServer == "" {
		p, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, ErrRedisNotInstalled
		}
		opts.RedisServer = p
	}
	cli, err := Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	if err := os.MkdirAll(opts.BuildDir, 0o755); err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	unlock, err := lockFile(ctx, filepath.Join(opts.BuildDir, ".lock"))
	if err != nil {
		return nil, err
	}
	defer unlock()

	type job struct {
		image, name string
		prepare     func(ctx context.Context, dir string) error
		// complete, if set, adds to the context what must not be hashed (it differs on
		// every call), only when the image is built.
		complete func(ctx context.Context, dir string) error
	}
	jobs := []job{
		{ImageFenceline, "fenceline", func(ctx context.Context, dir string) error {
			return goBuild(ctx, opts.ModuleDir, filepath.Join(dir, "fenceline"), "./cmd/fenceline")
		}, nil},
		{ImageToxiproxy, "toxiproxy", func(ctx context.Context, dir string) error {
			return goBuild(ctx, opts.ModuleDir, filepath.Join(dir, "toxiproxy-server"), "github.com/Shopify/toxiproxy/v2/cmd/server")
		}, nil},
		{ImageRedis, "redis", func(ctx context.Context, dir string) error {
			return redisRootfs(ctx, opts.RedisServer, filepath.Join(dir, "rootfs"))
		}, nil},
	}
	if opts.Postgres {
		jobs = append(jobs, job{ImagePostgres, "postgres", postgresRootfs, postgresData})
	}
	if opts.Etcd {
		jobs = append(jobs, job{ImageEtcd, "etcd", etcdRootfs, nil})
	}
	results := make([]ImageResult, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			t0 := time.Now()
			dir := filepath.Join(opts.BuildDir, j.name)
			res, err := buildOne(ctx, cli, opts, j.image, j.name, dir, j.prepare, j.complete)
			res.Took = time.Since(t0)
			results[i], errs[i] = res, err
			if err == nil {
				opts.Logger.Info("image", slog.String("image", j.image), slog.Bool("built", res.Built),
					slog.String("hash", res.Hash[:12]), slog.Duration("took", res.Took))
			}
		})
	}
	wg.Wait()
	return results, errors.Join(errs...)
}

// buildOne assembles one build context in dir and builds it unless an image with the
// same content hash exists.
func buildOne(ctx context.Context, cli *client.Client, opts BuildOptions, image, name, dir string,
	prepare, complete func(context.Context, string) error) (ImageResult, error) {
	res := ImageResult{Image: image}
	if err := os.RemoveAll(dir); err != nil {
		return res, fmt.Errorf("docker: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, fmt.Errorf("docker: %w", err)
	}
	df, err := dockerfiles.ReadFile("images/" + name + ".Dockerfile")
	if err != nil {
		return res, fmt.Errorf("docker: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), df, 0o644); err != nil {
		return res, fmt.Errorf("docker: %w", err)
	}
	if err := prepare(ctx, dir); err != nil {
		return res, fmt.Errorf("docker: %s: %w", image, err)
	}
	if res.Hash, err = hashDir(dir); err != nil {
		return res, fmt.Errorf("docker: %w", err)
	}
	var prev string // the image this build replaces
	if ins, err := cli.ImageInspect(ctx, image); err == nil {
		if !opts.Force && ins.Config != nil && ins.Config.Labels[LabelInputs] == res.Hash {
			return res, nil
		}
		prev = ins.ID
	}
	if complete != nil {
		if err := complete(ctx, dir); err != nil {
			return res, fmt.Errorf("docker: %s: %w", image, err)
		}
	}
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return res, fmt.Errorf("docker: %w", err)
	}
	defer provider.Close()
	repo, tag, _ := strings.Cut(image, ":")
	req := &testcontainers.ContainerRequest{FromDockerfile: testcontainers.FromDockerfile{
		Context: dir, Dockerfile: "Dockerfile", Repo: repo, Tag: tag, KeepImage: true,
		BuildLogWriter: opts.BuildLog,
		BuildOptionsModifier: func(o *client.ImageBuildOptions) {
			o.Version = build.BuilderV1 // the classic builder: BuildKit would want to pull a frontend
			o.Labels = map[string]string{LabelInputs: res.Hash, "fenceline.image": name}
		},
	}}
	if _, err := provider.BuildImage(ctx, req); err != nil {
		return res, fmt.Errorf("docker: build %s: %w", image, err)
	}
	res.Built = true
	if prev != "" {
		// The replaced image is now untagged: remove it (and its untagged parents) so that
		// rebuilds do not pile up. It fails harmlessly while a container still uses it.
		if old, err := cli.ImageInspect(ctx, prev); err == nil && len(old.RepoTags) == 0 {
			_, _ = cli.ImageRemove(ctx, prev, client.ImageRemoveOptions{PruneChildren: true})
		}
	}
	return res, nil
}

// goBuild builds a static linux binary of pkg into out. -trimpath and -buildvcs=false
// keep the binary, and so the image hash, the same while the code is the same.
func goBuild(ctx context.Context, moduleDir, out, pkg string) error {
	// -tags chaos,failpoints: the node image runs the chaos build (fault hooks,
	// failpoints, variants); the tags are nothing to the toxiproxy server's build.
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", "chaos,failpoints", "-trimpath", "-buildvcs=false", "-o", out, pkg)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// redisRootfs copies redis-server (following the symlink: Debian's redis-server points
// at redis-check-rdb, and Redis picks its mode from argv[0], so the copy must be named
// redis-server) and every library ldd lists, at the same paths, below root.
func redisRootfs(ctx context.Context, server, root string) error {
	libs, err := lddLibs(ctx, server)
	if err != nil {
		return err
	}
	if err := copyFile(server, filepath.Join(root, "redis-server"), 0o755); err != nil {
		return err
	}
	for _, l := range libs {
		if err := copyFile(l, filepath.Join(root, l), 0o755); err != nil {
			return err
		}
	}
	return nil
}

// lddLibs returns the libraries ldd lists for file.
func lddLibs(ctx context.Context, file string) ([]string, error) {
	out, err := exec.CommandContext(ctx, "ldd", file).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", file, err)
	}
	return parseLdd(out)
}

// parseLdd returns the absolute paths ldd's output names: "name => /path (addr)" and
// "/lib64/ld-linux-x86-64.so.2 (addr)"; the vDSO has no path.
func parseLdd(out []byte) ([]string, error) {
	var libs []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if _, after, ok := strings.Cut(line, "=>"); ok {
			line = strings.TrimSpace(after)
		}
		if strings.Contains(line, "not found") {
			return nil, fmt.Errorf("ldd: %s", sc.Text())
		}
		path, _, _ := strings.Cut(line, " ")
		if strings.HasPrefix(path, "/") {
			libs = append(libs, path)
		}
	}
	if len(libs) == 0 {
		return nil, errors.New("ldd listed no library: not a dynamic executable?")
	}
	return libs, nil
}

// copyFile copies the file behind src (symlinks followed) to dst.
func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// hashDir hashes every file below dir: relative path, mode and content, in path order.
func hashDir(dir string) (string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(files)
	h := sha256.New()
	fmt.Fprintf(h, "recipe %s\n", recipe)
	for _, p := range files {
		st, err := os.Stat(p)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%s %o %d\n", filepath.ToSlash(rel), st.Mode().Perm(), st.Size())
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// moduleDir finds the fenceline module's root from the working directory.
func moduleDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("docker: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("docker: not inside the fenceline module: run from the checkout or set BuildOptions.ModuleDir")
	}
	return filepath.Dir(mod), nil
}

// lockFile takes an exclusive flock on path, waiting for it while ctx allows.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("docker: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("docker: lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
