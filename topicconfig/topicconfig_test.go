package topicconfig

import (
	"testing"
	"time"

	"floe/kafkaproto"
)

func TestPolicies(t *testing.T) {
	for _, tc := range []struct {
		v            string
		set          bool
		del, compact bool
	}{
		{"", false, true, false},
		{"delete", true, true, false},
		{"compact", true, false, true},
		{"compact,delete", true, true, true},
		{" delete , compact ", true, true, true},
		{"bogus", true, false, false},
	} {
		c := map[string]string{}
		if tc.set {
			c[CleanupPolicy] = tc.v
		}
		if d, k := Policies(c); d != tc.del || k != tc.compact {
			t.Errorf("Policies(%q): %v %v, want %v %v", tc.v, d, k, tc.del, tc.compact)
		}
	}
}

func TestDefaults(t *testing.T) {
	d := KafkaDefaults()
	d.Retention = -time.Millisecond
	for name, want := range map[string]string{
		RetentionMs: "-1", RetentionBytes: "-1", DeleteRetentionMs: "86400000",
		MinCleanableDirtyRatio: "0.5", MaxCompactionLagMs: "600000", MaxMessageBytes: "1048588",
	} {
		if v, ok := d.Value(name); !ok || v != want {
			t.Errorf("%s: %q %v, want %q", name, v, ok, want)
		}
	}
	if _, ok := d.Value("segment.bytes"); ok {
		t.Error("segment.bytes has no floe default")
	}
	c := map[string]string{RetentionMs: " 5000 ", MinCleanableDirtyRatio: "x"}
	if d.Int(c, RetentionMs) != 5000 || d.Int(c, RetentionBytes) != -1 || d.Float(c, MinCleanableDirtyRatio) != 0.5 {
		t.Errorf("Int/Float: %d %d %v", d.Int(c, RetentionMs), d.Int(c, RetentionBytes), d.Float(c, MinCleanableDirtyRatio))
	}
}

// TestCompressionConfigs: compression.type takes every value Kafka's does
// and its levels Kafka's ranges, refused in Kafka's words
// (ConfigDef.ValidString, Range, GZIP's level validator, INT parsing).
func TestCompressionConfigs(t *testing.T) {
	for _, tc := range []struct{ name, value, why string }{
		{CompressionType, "producer", ""},
		{CompressionType, "uncompressed", ""},
		{CompressionType, "zstd", ""},
		{CompressionType, " lz4 ", ""},
		{CompressionType, "snappy", ""},
		{CompressionType, "gzip", ""},
		{CompressionType, "none", "Invalid value none for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{CompressionType, "ZSTD", "Invalid value ZSTD for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer"},
		{CompressionGzipLevel, "-1", ""},
		{CompressionGzipLevel, "1", ""},
		{CompressionGzipLevel, "9", ""},
		{CompressionGzipLevel, "0", "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{CompressionGzipLevel, "10", "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{CompressionGzipLevel, "-2", "Invalid value -2 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"},
		{CompressionGzipLevel, "fast", "Invalid value fast for configuration compression.gzip.level: Not a number of type INT"},
		{CompressionLz4Level, "1", ""},
		{CompressionLz4Level, "17", ""},
		{CompressionLz4Level, "0", "Invalid value 0 for configuration compression.lz4.level: Value must be at least 1"},
		{CompressionLz4Level, "18", "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17"},
		{CompressionLz4Level, "4294967296", "Invalid value 4294967296 for configuration compression.lz4.level: Not a number of type INT"},
		{CompressionZstdLevel, "-131072", ""},
		{CompressionZstdLevel, "22", ""},
		{CompressionZstdLevel, "-131073", "Invalid value -131073 for configuration compression.zstd.level: Value must be at least -131072"},
		{CompressionZstdLevel, "23", "Invalid value 23 for configuration compression.zstd.level: Value must be no more than 22"},
	} {
		if why := Check(tc.name, tc.value); why != tc.why {
			t.Errorf("Check(%s, %q) = %q, want %q", tc.name, tc.value, why, tc.why)
		}
	}
}

func TestCompression(t *testing.T) {
	for _, tc := range []struct {
		configs map[string]string
		want    kafkaproto.Compression
		ok      bool
	}{
		{nil, kafkaproto.Compression{}, false},
		{map[string]string{CompressionType: "producer"}, kafkaproto.Compression{}, false},
		{map[string]string{CompressionType: "brotli"}, kafkaproto.Compression{}, false},
		{map[string]string{CompressionType: "uncompressed"}, kafkaproto.Compression{Codec: kafkaproto.CodecNone}, true},
		{map[string]string{CompressionType: "snappy", CompressionZstdLevel: "9"}, kafkaproto.Compression{Codec: kafkaproto.CodecSnappy}, true},
		{map[string]string{CompressionType: "gzip"}, kafkaproto.Compression{Codec: kafkaproto.CodecGzip, Level: -1}, true},
		{map[string]string{CompressionType: "gzip", CompressionGzipLevel: " 9 "}, kafkaproto.Compression{Codec: kafkaproto.CodecGzip, Level: 9}, true},
		{map[string]string{CompressionType: "lz4"}, kafkaproto.Compression{Codec: kafkaproto.CodecLZ4, Level: 9}, true},
		{map[string]string{CompressionType: "lz4", CompressionLz4Level: "99"}, kafkaproto.Compression{Codec: kafkaproto.CodecLZ4, Level: 9}, true},
		{map[string]string{CompressionType: "zstd"}, kafkaproto.Compression{Codec: kafkaproto.CodecZstd, Level: 3}, true},
		{map[string]string{CompressionType: "zstd", CompressionZstdLevel: "-7"}, kafkaproto.Compression{Codec: kafkaproto.CodecZstd, Level: -7}, true},
	} {
		if got, ok := KafkaDefaults().Compression(tc.configs); got != tc.want || ok != tc.ok {
			t.Errorf("Compression(%v) = %+v %v, want %+v %v", tc.configs, got, ok, tc.want, tc.ok)
		}
	}
}

// TestCompressionDynamic: the cluster's dynamic compression.type and
// levels count for topics without their own; a topic's own wins.
func TestCompressionDynamic(t *testing.T) {
	d := KafkaDefaults().WithDynamic(map[string]string{"compression.type": "zstd", "compression.zstd.level": "9"})
	if got, ok := d.Compression(nil); !ok || got != (kafkaproto.Compression{Codec: kafkaproto.CodecZstd, Level: 9}) || !d.ZstdTopic(nil) {
		t.Fatalf("dynamic zstd: %+v %v, zstd topic %v", got, ok, d.ZstdTopic(nil))
	}
	own := map[string]string{CompressionType: "producer"}
	if _, ok := d.Compression(own); ok || d.ZstdTopic(own) {
		t.Fatal("a topic's own producer lost to the dynamic zstd")
	}
	if got, _ := d.Compression(map[string]string{CompressionType: "zstd", CompressionZstdLevel: "1"}); got.Level != 1 {
		t.Fatalf("own level lost: %+v", got)
	}
}
