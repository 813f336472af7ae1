package bufpool

import "testing"

func TestPoolClass(t *testing.T) {
	for _, n := range []int{0, 1, 1<<poolMinShift - 1, 1 << poolMinShift} {
		if c, _ := poolClass(n); c != -1 {
			t.Errorf("poolClass(%d) = class %d, want unpooled", n, c)
		}
	}
	prevClass, prevSize := -1, 0
	for n := 1<<poolMinShift + 1; n <= 1<<30; n += n/7 + 1 {
		c, size := poolClass(n)
		if c < 0 || c >= poolClasses {
			t.Fatalf("poolClass(%d) = class %d, out of range", n, c)
		}
		if size < n || float64(size) > 1.25*float64(n)+1 {
			t.Fatalf("poolClass(%d) = capacity %d, want in [n, 1.25n]", n, size)
		}
		if c < prevClass || (c == prevClass && size != prevSize) || (c > prevClass && size <= prevSize) {
			t.Fatalf("poolClass(%d) = (%d, %d) after (%d, %d): classes not monotonic", n, c, size, prevClass, prevSize)
		}
		// A buffer of the class's capacity is in the same class, so put
		// files it where get looks.
		if c2, size2 := poolClass(size); c2 != c || size2 != size {
			t.Fatalf("poolClass(%d) = (%d, %d), but its capacity maps to (%d, %d)", n, c, size, c2, size2)
		}
		prevClass, prevSize = c, size
	}
}

func TestPoolReusesAndStaysBounded(t *testing.T) {
	p := New(3 << 20)
	a := p.Get(1<<20 + 5)
	if len(a) != 1<<20+5 {
		t.Fatalf("len %d, want %d", len(a), 1<<20+5)
	}
	p.Put(a)
	b := p.Get(1<<20 + 100) // same class
	if &b[0] != &a[0] {
		t.Fatal("a buffer of the same class was not reused")
	}
	// A larger free buffer (up to twice the size) serves a smaller request.
	p.Put(b)
	c := p.Get(600 << 10)
	if &c[0] != &a[0] || len(c) != 600<<10 {
		t.Fatal("a free buffer of a class up to twice the size was not reused")
	}
	p.Put(c)
	if d := p.Get(300 << 10); &d[0] == &a[0] {
		t.Fatal("a free buffer over twice the size was handed out")
	}
	b = p.Get(1<<20 + 100)
	// Past max, returned buffers are dropped rather than kept.
	bufs := [][]byte{b, p.Get(1 << 20), p.Get(1 << 20), p.Get(1 << 20), p.Get(1 << 20)}
	for _, x := range bufs {
		p.Put(x)
	}
	if p.held > p.max {
		t.Fatalf("pool keeps %d bytes, more than its max %d", p.held, p.max)
	}
	// Foreign and small buffers are not kept.
	held := p.held
	p.Put(make([]byte, 100))
	p.Put(make([]byte, 1<<20+3))
	if p.held != held {
		t.Fatalf("pool kept a buffer it did not hand out: %d -> %d bytes", held, p.held)
	}
}

// TestPoolFullMakesRoomForLarger: a full pool drops smaller idle
// buffers to keep a larger one, but never drops any for nothing.
func TestPoolFullMakesRoomForLarger(t *testing.T) {
	p := New(4 << 20)
	small := [][]byte{p.Get(1 << 20), p.Get(1 << 20), p.Get(1 << 20), p.Get(1 << 20)}
	for _, b := range small {
		p.Put(b)
	}
	if p.held != 4<<20 {
		t.Fatalf("pool holds %d bytes, want the four 1 MiB buffers", p.held)
	}
	big := p.Get(2 << 20) // over twice 1 MiB: a fresh buffer
	if &big[0] == &small[3][0] {
		t.Fatal("a 1 MiB buffer was handed out for 2 MiB")
	}
	p.Put(big)
	if p.held != 4<<20 || len(p.free[c2(t, 2<<20)]) != 1 {
		t.Fatalf("pool holds %d bytes and %d 2 MiB buffers, want the 2 MiB one kept in place of two 1 MiB ones", p.held, len(p.free[c2(t, 2<<20)]))
	}
	if b := p.Get(2 << 20); &b[0] != &big[0] {
		t.Fatal("the kept 2 MiB buffer was not reused")
	}
	// Room is made with as few smaller buffers as it takes (one 1 MiB for
	// 3 MiB, as 2 MiB are held), and none are dropped for nothing: the
	// 2 MiB buffer cannot be kept beside the 3 MiB one with 1 MiB.
	huge := p.Get(3 << 20)
	p.Put(huge)
	if p.held != 4<<20 || len(p.free[c2(t, 1<<20)]) != 1 || len(p.free[c2(t, 3<<20)]) != 1 {
		t.Fatalf("pool holds %d bytes, %d 1 MiB and %d 3 MiB buffers, want one of each", p.held,
			len(p.free[c2(t, 1<<20)]), len(p.free[c2(t, 3<<20)]))
	}
	p.Put(big)
	if p.held != 4<<20 || len(p.free[c2(t, 1<<20)]) != 1 || len(p.free[c2(t, 2<<20)]) != 0 {
		t.Fatalf("pool holds %d bytes, %d 1 MiB and %d 2 MiB buffers, want the 1 MiB kept and the 2 MiB dropped", p.held,
			len(p.free[c2(t, 1<<20)]), len(p.free[c2(t, 2<<20)]))
	}
}

func c2(t *testing.T, n int) int {
	c, _ := poolClass(n)
	if c < 0 {
		t.Fatalf("%d bytes: not pooled", n)
	}
	return c
}
