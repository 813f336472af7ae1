package iceberg

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	havro "github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/encoding/protowire"

	"floe/metadata"
)

// TestConvertMemoryWithinBudget's target file size, and record bytes
// (0: 14 times the file size, about three and a half files at 4:1).
var (
	memoryFileSize = flag.Int64("convert-memory-file-size", 4<<20,
		"TestConvertMemoryWithinBudget's target file size in bytes")
	memoryRecordBytes = flag.Int64("convert-memory-record-bytes", 0,
		"TestConvertMemoryWithinBudget's record bytes (0: 14 times its file size)")
)

// TestConvertMemoryWithinBudget: a cycle converting orders of varied
// values (the benchmarks' twenty fields, which compress about 4:1 in
// Parquet as real orders do, where the benchmarks' one repeated record
// compresses 400:1) in objects of 8 MiB, an agent's flush, into files of
// -convert-memory-file-size bytes, several of them, cut at that size,
// holds no more live heap (cycleMeter) than ConverterConfig.MemoryBytes,
// for a binary table and each typed format.
func TestConvertMemoryWithinBudget(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("converts 56 MiB of records per format; a bound of the plain build")
	}
	for _, f := range orderFormats {
		t.Run(f.name, func(t *testing.T) {
			e := f.env(t)
			e.conv.cfg.TargetFileSize = *memoryFileSize
			total := *memoryRecordBytes
			if total == 0 {
				total = 14 * *memoryFileSize
			}
			written := f.produce(t, e, total)
			l, err := metadata.AcquireJobLease(e.ctx, e.store, "iceberg/orders", "test", 60e9)
			if err != nil || l == nil {
				t.Fatal(err)
			}
			var m cycleMeter
			m.measure(t, func() error { return e.conv.cycle(e.ctx, l, e.topic) })
			files := testutil.ToFloat64(e.conv.metrics.files)
			bytes := testutil.ToFloat64(e.conv.metrics.bytes)
			if n := testutil.CollectAndCount(e.conv.metrics.dlq); n != 0 {
				t.Fatalf("records went to the dead-letter table (%d reasons)", n)
			}
			budget := e.conv.cfg.MemoryBytes()
			t.Logf("%d MiB of records into %v files (%.1f MiB): %.1f MiB live, budget %.1f MiB",
				written>>20, files, bytes/(1<<20), float64(m.live)/(1<<20), float64(budget)/(1<<20))
			if bytes < float64(2*rowGroupBytes(*memoryFileSize)) {
				t.Fatalf("%.1f MiB of files: the workload does not fill two row groups", bytes/(1<<20))
			}
			if want := math.Floor(bytes / float64(*memoryFileSize)); files < want {
				t.Fatalf("%.1f MiB in %v files, want at least %v: files are not cut at %d MiB",
					bytes/(1<<20), files, want, *memoryFileSize>>20)
			}
			if int64(m.live) > budget {
				t.Fatalf("the cycle held %.1f MiB live, over its budget (MemoryBytes) of %.1f MiB",
					float64(m.live)/(1<<20), float64(budget)/(1<<20))
			}
		})
	}
}

// orderFormat is a table the orders are converted into: binary, or typed
// in one of the formats.
type orderFormat struct {
	name, mode, schemaType, schema string
	encode                         func(order) []byte
	index                          []int
}

var orderFormats = []orderFormat{
	{"binary", "", "", "", order.json, nil},
	{"avro", ModeSchemaIDPrefix, "AVRO", "order.avsc", order.avro, nil},
	{"protobuf", ModeSchemaIDPrefix, "PROTOBUF", "order.proto", order.protobuf, []int{0}},
	{"json_schema", ModeSchemaIDPrefix, "JSON", "order.schema.json", order.json, nil},
	{"json", ModeJSON, "", "", order.json, nil},
}

// env is a typedEnv whose topic orders is converted as f.
func (f orderFormat) env(t *testing.T) *typedEnv {
	configs := map[string]string{}
	if f.mode != "" {
		configs[ConfigValueMode] = f.mode
	}
	return newTypedEnv(t, configs)
}

// produce produces total bytes of varied orders in objects of 8 MiB (an
// agent's flush), f's schema registered for them, and returns the bytes
// produced.
func (f orderFormat) produce(t *testing.T, e *typedEnv, total int64) int64 {
	var frame []byte
	if f.schema != "" {
		var out struct{ ID int }
		e.call("POST", "/subjects/orders-value/versions",
			map[string]any{"schema": string(readBenchFile(t, f.schema)), "schemaType": f.schemaType}, &out)
		var h sr.ConfluentHeader
		var err error
		if frame, err = h.AppendEncode(nil, out.ID, f.index); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var values [][]byte
	var written, objectBytes int64
	for written < total {
		v := append(append([]byte{}, frame...), f.encode(newOrder(rng, written))...)
		values = append(values, v)
		written += int64(len(v))
		if objectBytes += int64(len(v)); objectBytes >= 8<<20 || written >= total {
			e.produce(values...)
			values, objectBytes = nil, 0
		}
	}
	return written
}

// order is one of the benchmarks' orders (testdata/bench/order.avsc).
type order struct {
	ID         int64    `avro:"id" json:"id"`
	CustomerID int64    `avro:"customer_id" json:"customer_id"`
	Customer   string   `avro:"customer" json:"customer"`
	Email      string   `avro:"email" json:"email"`
	Phone      string   `avro:"phone" json:"phone"`
	Street     string   `avro:"street" json:"street"`
	City       string   `avro:"city" json:"city"`
	Zip        string   `avro:"zip" json:"zip"`
	Country    string   `avro:"country" json:"country"`
	Currency   string   `avro:"currency" json:"currency"`
	Amount     float64  `avro:"amount" json:"amount"`
	Tax        float64  `avro:"tax" json:"tax"`
	Quantity   int32    `avro:"quantity" json:"quantity"`
	SKU        string   `avro:"sku" json:"sku"`
	Status     string   `avro:"status" json:"status"`
	Gift       bool     `avro:"gift" json:"gift"`
	CreatedAt  int64    `avro:"created_at" json:"created_at"`
	UpdatedAt  int64    `avro:"updated_at" json:"updated_at"`
	Tags       []string `avro:"tags" json:"tags"`
	Notes      string   `avro:"notes" json:"notes"`
}

var (
	orderSchema = havro.MustParse(string(mustReadBench("order.avsc")))
	orderWords  = strings.Fields(`the a of to and in for on with by from at as is was be are this that order parcel
		deliver delivery leave door porch neighbour ring bell call before after morning afternoon evening weekend
		gift wrap card message happy birthday anniversary congratulations fragile handle care glass keep upright
		box small large heavy light blue red green black white silver gold size medium extra please thanks note
		customer asked wants prefers back side gate code entrance floor flat apartment building office reception
		return exchange refund replace damaged missing late early tracking courier signature required optional`)
	orderNames    = []string{"Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "John", "Margaret", "Ken", "Radia", "Tim"}
	orderSurnames = []string{"Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Backus", "Hamilton", "Thompson", "Perlman", "Berners-Lee"}
	orderCities   = []string{"London", "Paris", "Berlin", "Madrid", "Rome", "Vienna", "Dublin", "Lisbon", "Oslo", "Warsaw"}
	orderStatuses = []string{"NEW", "PAID", "SHIPPED", "CANCELLED"}
	orderTags     = []string{"priority", "gift-wrap", "fragile", "eu-shipping", "express", "bulk", "returning", "vip"}
)

func mustReadBench(name string) []byte {
	data, err := os.ReadFile(filepath.Join(benchRecords, name))
	if err != nil {
		panic(err)
	}
	return data
}

// newOrder is an order of varied values, about 1 KiB as JSON.
func newOrder(rng *rand.Rand, seq int64) order {
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	name, surname := pick(orderNames), pick(orderSurnames)
	i := rng.IntN(len(orderCities))
	o := order{
		ID: 1_700_000_000_000 + seq, CustomerID: rng.Int64N(10_000_000),
		Customer: name + " " + surname,
		Email:    strings.ToLower(name+"."+surname) + fmt.Sprintf("%d@example.com", rng.IntN(1000)),
		Phone:    fmt.Sprintf("+44 20 %04d %04d", rng.IntN(10000), rng.IntN(10000)),
		Street:   fmt.Sprintf("%d %s Street", 1+rng.IntN(300), pick(orderSurnames)),
		City:     orderCities[i], Zip: fmt.Sprintf("%05d", rng.IntN(100000)),
		Country:  []string{"GB", "FR", "DE", "ES", "IT", "AT", "IE", "PT", "NO", "PL"}[i],
		Currency: []string{"GBP", "EUR", "EUR", "EUR", "EUR", "EUR", "EUR", "EUR", "NOK", "PLN"}[i],
		Amount:   float64(rng.IntN(1_000_000)) / 100, Tax: float64(rng.IntN(200_000)) / 100,
		Quantity: int32(1 + rng.IntN(9)), SKU: fmt.Sprintf("SKU-%06d-%s", rng.IntN(1_000_000), pick(orderTags)),
		Status: pick(orderStatuses), Gift: rng.IntN(4) == 0,
		CreatedAt: 1_733_480_000_000 + seq*7, UpdatedAt: 1_733_480_000_000 + seq*7 + rng.Int64N(86_400_000),
		Tags: []string{},
	}
	for range rng.IntN(4) {
		o.Tags = append(o.Tags, pick(orderTags))
	}
	var notes strings.Builder
	for notes.Len() < 500+rng.IntN(200) {
		notes.WriteString(pick(orderWords))
		notes.WriteByte(' ')
	}
	o.Notes = notes.String()
	return o
}

func (o order) json() []byte {
	b, err := json.Marshal(o)
	if err != nil {
		panic(err)
	}
	return b
}

func (o order) avro() []byte {
	b, err := havro.Marshal(orderSchema, o)
	if err != nil {
		panic(err)
	}
	return b
}

// protobuf is o as testdata/bench/order.proto's shop.Order.
func (o order) protobuf() []byte {
	var b []byte
	varint := func(n protowire.Number, v uint64) {
		b = protowire.AppendTag(b, n, protowire.VarintType)
		b = protowire.AppendVarint(b, v)
	}
	str := func(n protowire.Number, s string) {
		b = protowire.AppendTag(b, n, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	double := func(n protowire.Number, v float64) {
		b = protowire.AppendTag(b, n, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, math.Float64bits(v))
	}
	varint(1, uint64(o.ID))
	varint(2, uint64(o.CustomerID))
	for i, s := range []string{o.Customer, o.Email, o.Phone, o.Street, o.City, o.Zip, o.Country, o.Currency} {
		str(protowire.Number(3+i), s)
	}
	double(11, o.Amount)
	double(12, o.Tax)
	varint(13, uint64(o.Quantity))
	str(14, o.SKU)
	for i, s := range orderStatuses {
		if s == o.Status && i > 0 {
			varint(15, uint64(i))
		}
	}
	if o.Gift {
		varint(16, 1)
	}
	varint(17, uint64(o.CreatedAt))
	varint(18, uint64(o.UpdatedAt))
	for _, s := range o.Tags {
		str(19, s)
	}
	str(20, o.Notes)
	return b
}
