package scale

import (
	"fmt"
	"slices"
	"sync"

	"github.com/smallinit/smallinit/arch"
	"github.com/smallinit/smallinit/safetensors"
)

// StreamOptions tune Stream.
type StreamOptions struct {
	// Workers is the number of tensors read at once (and, with Concurrent, processed at once); ≤ 0 means 2.
	// Memory is about Workers+1 times the largest tensor in float32.
	Workers int
	// Concurrent calls fn from the reading goroutines, in no particular order, as soon as each tensor is read;
	// otherwise fn is called from the calling goroutine in specs order while the next tensors are read ahead.
	Concurrent bool
	// Progress, if set, is called after each tensor is processed with the stored bytes done so far and the
	// total (from the checkpoint's dtypes). Calls are serialised.
	Progress func(done, total int64)
}

// Stream reads every tensor of specs from r, one at a time, converted to float32, and calls fn with it; w is
// only valid during the call (its memory is reused). Every tensor must be present with the shape specs gives;
// errors name the checkpoint and the tensor. The first error (from reading or from fn) stops the stream. The
// whole checkpoint is never in memory: only the tensors being read or processed are.
func Stream(r safetensors.Reader, specs []arch.TensorSpec, o StreamOptions, fn func(t arch.TensorSpec, w []float32) error) error {
	var total int64
	sizes := make([]int64, len(specs))
	for i, t := range specs {
		info, ok := r.Info(t.Name)
		if !ok {
			return fmt.Errorf("%s: tensor %s is missing", r.Path(), t.Name)
		}
		if !slices.Equal(info.Shape, t.Shape) {
			return fmt.Errorf("%s: tensor %s has shape %v, the config implies %v", r.Path(), t.Name, info.Shape, t.Shape)
		}
		sizes[i] = info.End - info.Begin
		total += sizes[i]
	}
	workers := o.Workers
	if workers <= 0 {
		workers = 2
	}
	type item struct {
		buf  []float32
		err  error
		done chan struct{}
	}
	items := make([]item, len(specs))
	for i := range items {
		items[i].done = make(chan struct{})
	}
	// free holds the reusable buffers; its capacity bounds the tensors in memory. The dispatcher hands them
	// out in specs order, so the tensor the consumer waits for never waits for a buffer held further ahead.
	slots := workers
	if !o.Concurrent {
		slots = workers + 1
	}
	free := make(chan []float32, slots)
	for range slots {
		free <- nil
	}
	var (
		mu       sync.Mutex
		firstErr error
		done     int64
		stopOnce sync.Once
	)
	stop := make(chan struct{})
	halt := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		stopOnce.Do(func() { close(stop) })
	}
	type task struct {
		i   int
		buf []float32
	}
	tasks := make(chan task)
	go func() {
		defer close(tasks)
		for i := range specs {
			var buf []float32
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			select {
			case tasks <- task{i, buf}:
			case <-stop:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tk := range tasks {
				t := specs[tk.i]
				buf := tk.buf
				if n := t.Size(); cap(buf) < n {
					buf = make([]float32, n)
				} else {
					buf = buf[:n]
				}
				err := r.ReadFloat32(t.Name, buf)
				if !o.Concurrent {
					items[tk.i].buf, items[tk.i].err = buf, err
					close(items[tk.i].done)
					continue
				}
				if err == nil {
					err = fn(t, buf)
				}
				free <- buf
				if err != nil {
					halt(err)
					continue
				}
				mu.Lock()
				done += sizes[tk.i]
				if o.Progress != nil {
					o.Progress(done, total)
				}
				mu.Unlock()
			}
		}()
	}
	if o.Concurrent {
		wg.Wait()
		stopOnce.Do(func() { close(stop) })
		return firstErr
	}
	var err error
	for i, t := range specs {
		it := &items[i]
		<-it.done
		if err = it.err; err != nil {
			break
		}
		err = fn(t, it.buf)
		free <- it.buf
		it.buf = nil
		if err != nil {
			break
		}
		done += sizes[i]
		if o.Progress != nil {
			o.Progress(done, total)
		}
	}
	stopOnce.Do(func() { close(stop) })
	wg.Wait()
	return err
}
