package scale

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/gammainit"
	"github.com/smallinit/smallinit/recipe"
	"github.com/smallinit/smallinit/safetensors"
)

// DefaultMemory bounds the generated tensors waiting to be written (1 GiB), unless InitOptions.Memory says
// otherwise. It is raised to the largest tensor when that is larger.
const DefaultMemory = 1 << 30

// InitOptions tune Init. The zero value writes float32 shards of at most 2 GB on every core.
type InitOptions struct {
	DType     safetensors.DType // stored dtype: F32 (default) or BF16 (rounded to nearest even)
	ShardSize int64             // tensor bytes per shard; ≤ 0: DefaultShardSize
	Workers   int               // tensors generated in parallel; ≤ 0: runtime.GOMAXPROCS(0)
	Memory    int64             // bytes of generated, unwritten tensors; ≤ 0: DefaultMemory
	Record    *gammainit.Record // recorded in config.json as smallinit_init (nil: none)
	// Context, if set, cancels the init: Init then stops between two tensors, removes what it wrote and
	// returns the context's error.
	Context context.Context
	// Progress, if set, is called from one goroutine after each tensor is written, with the tensor bytes
	// written so far and the total.
	Progress func(done, total int64)
}

// InitResult describes what Init wrote.
type InitResult struct {
	Stds  []gammainit.TensorStd // intended and drawn std of every matrix, in buffer order, as gammainit.Apply
	Files []string              // files in the directory: the shards, the index if sharded, config.json
	Bytes int64                 // tensor data bytes over all shards
}

// Init writes a freshly initialised model directory dir for config c: norm gains 1, norm biases 0, and every
// matrix drawn from its gammainit.Stream by recipe r and seed, in element order, so that the values equal
// gammainit.Apply's on an in-memory model (bit for bit in float32; rounded to nearest even in bfloat16).
//
// The model is never held in memory: Workers goroutines generate tensors (in buffer order, each from its own
// stream) while one writer appends them, in order, to the current shard, and at most Memory bytes of generated
// tensors wait for the writer. Shards follow PlanShards; a sharded checkpoint gets a
// model.safetensors.index.json with metadata.total_size and weight_map. config.json is model.Save's with
// torch_dtype naming the stored dtype.
//
// The directory is written atomically: everything goes to a temporary directory beside dir, each file is
// synced, and the temporary directory is renamed to dir. An existing dir is replaced only if it holds nothing
// but checkpoint files (config.json, model.safetensors, the index and model-*-of-*.safetensors shards), so
// that a stale model.safetensors cannot shadow new shards; otherwise Init refuses and writes nothing.
func Init(dir string, c arch.Config, r recipe.Init, seed uint64, o InitOptions) (InitResult, error) {
	if err := c.Validate(); err != nil {
		return InitResult{}, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := r.Validate(); err != nil {
		return InitResult{}, fmt.Errorf("init %s: %w", dir, err)
	}
	if o.DType == "" {
		o.DType = safetensors.F32
	}
	if o.DType != safetensors.F32 && o.DType != safetensors.BF16 {
		return InitResult{}, fmt.Errorf("init %s: dtype %q: want F32 or BF16", dir, o.DType)
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Memory <= 0 {
		o.Memory = DefaultMemory
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return InitResult{}, fmt.Errorf("init %s: %w", dir, err)
	}
	if err := checkReplaceable(abs); err != nil {
		return InitResult{}, err
	}
	parent := filepath.Dir(abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return InitResult{}, fmt.Errorf("init %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(abs)+".tmp-")
	if err != nil {
		return InitResult{}, fmt.Errorf("init %s: %w", dir, err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return InitResult{}, fmt.Errorf("init %s: %w", dir, err)
	}

	td, _ := TorchDtype(o.DType)
	cfgJSON, err := configJSON(c, o.Record, td)
	if err != nil {
		return InitResult{}, fmt.Errorf("init %s: %w", dir, err)
	}
	shards := PlanShards(c.Tensors(), o.DType, o.ShardSize)
	res, err := writeShards(tmp, shards, c, r, seed, o)
	if err != nil {
		return InitResult{}, fmt.Errorf("init %s: %w", dir, err)
	}
	if len(shards) > 1 {
		b, err := indexJSON(shards)
		if err == nil {
			err = writeFileSync(filepath.Join(tmp, safetensors.IndexFileName), b)
		}
		if err != nil {
			return InitResult{}, fmt.Errorf("init %s: %w", dir, err)
		}
		res.Files = append(res.Files, safetensors.IndexFileName)
	}
	err = writeFileSync(filepath.Join(tmp, arch.ConfigFile), cfgJSON)
	if err == nil {
		err = syncDir(tmp)
	}
	if err != nil {
		return InitResult{}, fmt.Errorf("init %s: %w", dir, err)
	}
	res.Files = append(res.Files, arch.ConfigFile)
	if err := checkReplaceable(abs); err != nil { // again: the directory may have changed meanwhile
		return InitResult{}, err
	}
	if err := replaceDir(tmp, abs); err != nil {
		return InitResult{}, fmt.Errorf("init %s: %w", dir, err)
	}
	ok = true
	syncDir(parent) // best effort
	return res, nil
}

// checkReplaceable refuses a dir that exists and is not a directory of checkpoint files only.
func checkReplaceable(dir string) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("init %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("init %s: exists and is not a directory", dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("init %s: %w", dir, err)
	}
	var other []string
	for _, e := range ents {
		if !e.Type().IsRegular() || !isModelFile(e.Name()) {
			other = append(other, e.Name())
		}
	}
	if len(other) > 0 {
		sort.Strings(other)
		if len(other) > 3 {
			other = append(other[:3], "...")
		}
		return fmt.Errorf("init %s: the directory also holds %s; refusing to replace it (choose another directory or remove it)", dir, strings.Join(other, ", "))
	}
	return nil
}

// replaceDir renames the finished tmp to dir. An existing dir is swapped with tmp in one atomic step where the
// system can (Linux), else moved aside first; the old directory is then deleted, and a failure to delete it
// (the new checkpoint being in place) is not an error.
func replaceDir(tmp, dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return os.Rename(tmp, dir)
	}
	if err := exchange(tmp, dir); err == nil {
		os.RemoveAll(tmp) // now the old directory
		return nil
	}
	// No atomic exchange (another system, or a file system without it): two renames, with a window in which
	// dir is absent and the old checkpoint is at tmp.old.
	old := tmp + ".old"
	if err := os.Rename(dir, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if rerr := os.Rename(old, dir); rerr != nil {
			return fmt.Errorf("%w (and restoring the previous directory from %s failed: %v)", err, old, rerr)
		}
		return err
	}
	os.RemoveAll(old)
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// job is one tensor on its way from a generator to the writer.
type job struct {
	t     arch.TensorSpec
	std   float64 // intended std (matrices)
	buf   []byte  // encoded tensor
	drawn float64 // std of the float32 draw (matrices)
	done  chan struct{}
}

// budget is a byte semaphore that always admits a request when nothing is held, so a tensor larger than the
// budget still goes through (alone).
type budget struct {
	mu        sync.Mutex
	cond      *sync.Cond
	used, max int64
	stopped   bool
}

func newBudget(max int64) *budget {
	b := &budget{max: max}
	b.cond = sync.NewCond(&b.mu)
	return b
}

func (b *budget) acquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.stopped && b.used > 0 && b.used+n > b.max {
		b.cond.Wait()
	}
	b.used += n
	return !b.stopped
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *budget) stop() {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	b.cond.Broadcast()
}

// writeShards generates and writes every shard into dir.
func writeShards(dir string, shards []Shard, c arch.Config, r recipe.Init, seed uint64, o InitOptions) (InitResult, error) {
	var res InitResult
	var jobs []*job
	for _, s := range shards {
		res.Bytes += s.Bytes
		for _, t := range s.Tensors {
			j := &job{t: t, done: make(chan struct{})}
			if t.IsMatrix() {
				j.std = r.StdFor(t, c.Layers)
			}
			jobs = append(jobs, j)
		}
	}
	es := int64(o.DType.Size())
	bud := newBudget(o.Memory)
	bufs := &bufPool{max: o.Memory}
	var stop atomic.Bool
	work := make(chan *job, len(jobs))
	go func() { // dispatcher: admits tensors in buffer order, so the writer's next tensor always gets memory
		defer close(work)
		for _, j := range jobs {
			if !bud.acquire(int64(j.t.Size()) * es) {
				return
			}
			work <- j
		}
	}()
	var wg sync.WaitGroup
	for range o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				if !stop.Load() {
					generate(j, seed, o.DType, bufs.get(j.t.Size()*o.DType.Size()))
				}
				close(j.done)
			}
		}()
	}
	defer func() {
		stop.Store(true)
		bud.stop()
		for range work { // drain what the dispatcher still sends
		}
		wg.Wait()
	}()

	var syncs sync.WaitGroup
	var syncMu sync.Mutex
	var syncErr error
	var done int64
	next := 0
	for _, s := range shards {
		f, err := os.OpenFile(filepath.Join(dir, s.File), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if err != nil {
			return res, err
		}
		hdr, err := header(s, o.DType)
		if err == nil {
			_, err = f.Write(hdr)
		}
		for range s.Tensors {
			if err == nil && o.Context != nil {
				err = o.Context.Err()
			}
			if err != nil {
				break
			}
			j := jobs[next]
			next++
			<-j.done
			_, err = f.Write(j.buf)
			n := int64(len(j.buf))
			bufs.put(j.buf)
			j.buf = nil
			bud.release(n)
			done += n
			if j.t.IsMatrix() {
				res.Stds = append(res.Stds, gammainit.TensorStd{Name: j.t.Name, Class: j.t.Class, FanIn: j.t.FanIn(),
					Intended: j.std, Drawn: j.drawn, GammaEff: gammainit.GammaEff(j.std, j.t.FanIn())})
			}
			if o.Progress != nil && err == nil {
				o.Progress(done, res.Bytes)
			}
		}
		if err != nil {
			f.Close()
			syncs.Wait()
			return res, fmt.Errorf("write %s: %w", s.File, err)
		}
		res.Files = append(res.Files, s.File)
		syncs.Add(1)
		go func(f *os.File, name string) { // let the page cache drain while the next shard is generated
			defer syncs.Done()
			err := f.Sync()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				syncMu.Lock()
				syncErr = errors.Join(syncErr, fmt.Errorf("write %s: %w", name, err))
				syncMu.Unlock()
			}
		}(f, s.File)
	}
	syncs.Wait()
	return res, syncErr
}

// bufPool recycles the tensor buffers between the writer and the generators, keeping at most max bytes of
// idle buffers: fresh multi-megabyte allocations cost page faults and zeroing that a 6 GB model pays for
// thousands of times.
type bufPool struct {
	mu   sync.Mutex
	max  int64
	idle int64
	free [][]byte
}

// get returns a buffer of n bytes (contents undefined), reusing an idle one at most twice as large.
func (p *bufPool) get(n int) []byte {
	p.mu.Lock()
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && cap(b) <= 2*n+4096 && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := p.free[best]
		p.free = append(p.free[:best], p.free[best+1:]...)
		p.idle -= int64(cap(b))
		p.mu.Unlock()
		return b[:n]
	}
	p.mu.Unlock()
	return make([]byte, n)
}

// put returns b for reuse, dropping the oldest idle buffers beyond max bytes.
func (p *bufPool) put(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, b)
	p.idle += int64(cap(b))
	for p.idle > p.max && len(p.free) > 0 {
		p.idle -= int64(cap(p.free[0]))
		p.free = p.free[1:]
	}
}

// generate fills buf (the tensor's size in bytes, contents undefined) with tensor j.t encoded as dtype and
// keeps it in j.buf: the start gammainit gives its class (gammainit.StartOf: ones, zeros, or drawn), a drawn
// matrix being gammainit.Stream(seed, name).Fill's float32 values, in element order, with the std of those
// float32 draws (before any rounding to bfloat16) in j.drawn, accumulated as gammainit.Apply does.
func generate(j *job, seed uint64, dtype safetensors.DType, buf []byte) {
	n := j.t.Size()
	es := dtype.Size()
	j.buf = buf[:n*es]
	switch gammainit.StartOf(j.t.Class) {
	case gammainit.StartZeros:
		clear(j.buf)
		return
	case gammainit.StartOnes:
		var one [1]float32
		one[0] = 1
		for i := 0; i < n; i++ {
			encode(j.buf[i*es:], one[:], dtype)
		}
		return
	}
	var ss float64
	var chunk [4096]float32
	s := gammainit.Stream(seed, j.t.Name)
	for i := 0; i < n; i += len(chunk) {
		c := chunk[:min(len(chunk), n-i)]
		s.Fill(c, j.std, &ss)
		encode(j.buf[i*es:], c, dtype)
	}
	j.drawn = math.Sqrt(ss / float64(n))
}

// encode stores src as dtype (F32, or BF16 rounded to nearest even by safetensors.F32ToBF16) at the start of
// dst, little-endian.
func encode(dst []byte, src []float32, dtype safetensors.DType) {
	if dtype == safetensors.BF16 {
		for i, x := range src {
			binary.LittleEndian.PutUint16(dst[2*i:], safetensors.F32ToBF16(x))
		}
		return
	}
	for i, x := range src {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(x))
	}
}
