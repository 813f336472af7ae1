package iceberg

import (
	"strings"
	"testing"
)

func TestParsePartitionSpec(t *testing.T) {
	for _, c := range []struct {
		spec   string
		fields string // names of the partition fields, or the error's substring
		ok     bool
	}{
		{"day(timestamp)", "timestamp_day", true},
		{"", "", true},
		{"identity(partition), hour(timestamp)", "partition,timestamp_hour", true},
		{"bucket[16](key),truncate[4](value)", "key_bucket_16,value_trunc_4", true},
		{"month(timestamp), year(timestamp)", "conflicts", false},
		{"day(partition)", "cannot transform", false},
		{"day(headers)", "no column", false},
		{"day(nope)", "no column", false},
		{"week(timestamp)", "invalid transform", false},
		{"day timestamp", "want TRANSFORM(COLUMN)", false},
		{"identity(partition),identity(partition)", "given twice", false},
		{"bucket[0](key)", "invalid transform", false},
	} {
		spec, err := ParsePartitionSpec(c.spec)
		if !c.ok {
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.fields)) {
				t.Errorf("%q: error %v, want one saying %q", c.spec, err, c.fields)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		var names []string
		for _, f := range spec.Fields() {
			names = append(names, f.Name)
		}
		if got := strings.Join(names, ","); got != c.fields {
			t.Errorf("%q: fields %s, want %s", c.spec, got, c.fields)
		}
	}
}

func TestPaginate(t *testing.T) {
	names := []string{"c", "a", "b", "d"}
	page, next := paginate(append([]string(nil), names...), "", 3)
	if strings.Join(page, "") != "abc" || next != "c" {
		t.Fatalf("first page %v next %v", page, next)
	}
	page, next = paginate(append([]string(nil), names...), "c", 3)
	if strings.Join(page, "") != "d" || next != nil {
		t.Fatalf("second page %v next %v", page, next)
	}
	if page, next = paginate(append([]string(nil), names...), "", -1); len(page) != 4 || next != nil {
		t.Fatalf("unpaged %v %v", page, next)
	}
}

func TestTableName(t *testing.T) {
	if TableName("orders.v1-eu") != "orders_v1-eu" {
		t.Fatal(TableName("orders.v1-eu"))
	}
}

func TestCheckTypedConfig(t *testing.T) {
	for _, c := range []struct {
		key, value string
		ok         bool
	}{
		{ConfigValueMode, ModeBinary, true},
		{ConfigValueMode, ModeSchemaIDPrefix, true},
		{ConfigValueMode, ModeSchemaLatest, true},
		{ConfigValueMode, ModeJSON, true},
		{ConfigValueMode, "avro", false},
		{ConfigValueMode, "", false},
		{ConfigKeyMode, ModeSchemaIDPrefix, true},
		{ConfigKeyMode, "string", false},
		{ConfigValueSubject, "orders-value", true},
		{ConfigValueSubject, " ", false},
		{ConfigValueSubject, "", true},
		{ConfigValueProtobufMessage, "", true},
		{ConfigKeySubject, "orders-key", true},
		{ConfigValueProtobufMessage, "shop.v1.Order", true},
		{ConfigValueProtobufMessage, ".shop.Order", true},
		{ConfigValueProtobufMessage, "shop..Order", false},
		{ConfigValueProtobufMessage, "1Order", false},
		{"floe.iceberg.nope", "x", false},
	} {
		err := CheckTopicConfig(c.key, c.value)
		if (err == nil) != c.ok {
			t.Errorf("%s=%q: error %v, want ok %v", c.key, c.value, err, c.ok)
		}
	}
}
