// Command tuttibench holds the Go peers of tutti's CSP benchmarks, one subcommand each.
// Every run prints one JSON line: {"bench":…, "impl":"go", "metric":…, "value":…, "unit":…}
// (hello prints two: ns per message and peak RSS). See README.md.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

type result struct {
	Bench  string  `json:"bench"`
	Impl   string  `json:"impl"`
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
}

func emit(bench, metric string, value float64, unit string) {
	b, err := json.Marshal(result{bench, "go", metric, value, unit})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(b))
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: tuttibench pingpong|hello|buffered|barrier [flags]  (-h per subcommand)")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmd, args := os.Args[1], os.Args[2:]
	switch cmd {
	case "pingpong":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		n := fs.Int("n", 1_000_000, "messages (each direction counts one)")
		fs.Parse(args)
		emit("pingpong", "time_per_message", pingPong(*n), "ns")
	case "hello":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		n := fs.Int("n", 100, "nodes")
		m := fs.Int("m", 10, "messages per node pair")
		version := fs.Int("version", 2, "1: 2n² goroutines; 2: 2n goroutines")
		fs.Parse(args)
		ns := hello(*n, *m, *version)
		bench := "hello_v" + strconv.Itoa(*version)
		emit(bench, "time_per_message", ns, "ns")
		emit(bench, "peak_rss", float64(peakRSS()), "bytes")
	case "buffered":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		n := fs.Int("n", 10_000_000, "messages")
		capacity := fs.Int("cap", 1024, "channel capacity")
		fs.Parse(args)
		emit("buffered", "time_per_message", buffered(*n, *capacity), "ns")
	case "barrier":
		fs := flag.NewFlagSet(cmd, flag.ExitOnError)
		k := fs.Int("k", 1000, "goroutines enrolled")
		s := fs.Int("s", 1000, "syncs per goroutine")
		fs.Parse(args)
		emit("barrier", "time_per_process_per_sync", barrierBench(*k, *s), "ns")
	default:
		usage()
	}
}

// pingPong: two goroutines bounce a value over two unbuffered channels; n messages in all.
func pingPong(n int) float64 {
	ping, pong := make(chan int), make(chan int)
	go func() {
		for v := range ping {
			pong <- v + 1
		}
		close(pong)
	}()
	start := time.Now()
	v := 0
	for i := 0; i < n/2; i++ {
		ping <- v
		v = <-pong
	}
	el := time.Since(start)
	close(ping)
	if v != n/2 {
		panic("pingpong: lost a message")
	}
	return float64(el.Nanoseconds()) / float64(2*(n/2))
}

// hello: "say hello to everyone" (seed 003). c[i][j] carries i's messages to j.
// v1: for each i, n parallel senders (one per j) and n parallel receivers — 2n² goroutines.
// v2: for each i, one sender and one receiver looping over j in sequence — 2n goroutines.
// m·n² messages; every receiver checks the sender's id.
func hello(n, m, version int) float64 {
	c := make([][]chan int, n)
	for i := range c {
		c[i] = make([]chan int, n)
		for j := range c[i] {
			c[i][j] = make(chan int)
		}
	}
	var wg sync.WaitGroup
	start := time.Now()
	switch version {
	case 1:
		wg.Add(2 * n * n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				go func(i, j int) {
					defer wg.Done()
					for k := 0; k < m; k++ {
						c[i][j] <- i
					}
				}(i, j)
				go func(i, j int) {
					defer wg.Done()
					for k := 0; k < m; k++ {
						if x := <-c[j][i]; x != j {
							panic(fmt.Sprintf("hello: %d got %d from channel of %d", i, x, j))
						}
					}
				}(i, j)
			}
		}
	case 2:
		wg.Add(2 * n)
		for i := 0; i < n; i++ {
			go func(i int) {
				defer wg.Done()
				for j := 0; j < n; j++ {
					for k := 0; k < m; k++ {
						c[i][j] <- i
					}
				}
			}(i)
			go func(i int) {
				defer wg.Done()
				for j := 0; j < n; j++ {
					for k := 0; k < m; k++ {
						if x := <-c[j][i]; x != j {
							panic(fmt.Sprintf("hello: %d got %d from channel of %d", i, x, j))
						}
					}
				}
			}(i)
		}
	default:
		fmt.Fprintln(os.Stderr, "hello: -version must be 1 or 2")
		os.Exit(2)
	}
	wg.Wait()
	el := time.Since(start)
	return float64(el.Nanoseconds()) / float64(m*n*n)
}

// buffered: one producer, one consumer, a channel of the given capacity.
func buffered(n, capacity int) float64 {
	ch := make(chan int, capacity)
	done := make(chan int)
	go func() {
		sum := 0
		for v := range ch {
			sum += v
		}
		done <- sum
	}()
	start := time.Now()
	for i := 0; i < n; i++ {
		ch <- 1
	}
	close(ch)
	sum := <-done
	el := time.Since(start)
	if sum != n {
		panic("buffered: lost a message")
	}
	return float64(el.Nanoseconds()) / float64(n)
}

// barrier is the idiomatic reusable barrier: a mutex-protected count and a generation
// channel that the last arriver closes (a broadcast that wakes every waiter at once,
// cheaper than sync.Cond.Broadcast's per-waiter notify list walk under the lock, and
// reusable, unlike a sync.WaitGroup, which cannot be re-armed while waiters are inside).
type barrier struct {
	mu      sync.Mutex
	parties int
	count   int
	gen     chan struct{}
}

func newBarrier(parties int) *barrier {
	return &barrier{parties: parties, gen: make(chan struct{})}
}

func (b *barrier) sync() {
	b.mu.Lock()
	gen := b.gen
	b.count++
	if b.count == b.parties {
		b.count = 0
		b.gen = make(chan struct{})
		b.mu.Unlock()
		close(gen)
		return
	}
	b.mu.Unlock()
	<-gen
}

// barrierBench: k goroutines, s syncs each; ns per process per sync.
func barrierBench(k, s int) float64 {
	b := newBarrier(k)
	var wg sync.WaitGroup
	wg.Add(k)
	start := time.Now()
	for i := 0; i < k; i++ {
		go func() {
			defer wg.Done()
			for j := 0; j < s; j++ {
				b.sync()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	return float64(el.Nanoseconds()) / float64(k*s)
}

// peakRSS reads VmHWM (peak resident set) from /proc/self/status, in bytes (0 if absent).
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, err := strconv.ParseInt(f[1], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}
