package protobuf

// builtinFiles are the files Confluent's registry resolves without a
// reference (ProtobufSchema's KNOWN_DEPENDENCIES), beyond the
// google/protobuf well-known types that protocompile carries: Confluent's
// own confluent/meta.proto and confluent/type/{decimal,variant}.proto, and
// Google's common google/type files. Only what clients depend on is kept:
// packages, message, field and enum names and numbers; comments and
// language options are dropped.
var builtinFiles = map[string]string{
	"confluent/meta.proto": `syntax = "proto3";
package confluent;
import "google/protobuf/descriptor.proto";
message Meta {
  string doc = 1;
  map<string, string> params = 2;
  repeated string tags = 3;
  repeated Rule rules = 4;
}
message Rule {
  string name = 1;
  string doc = 2;
  string expr = 3;
  string sql = 4;
}
extend google.protobuf.FileOptions { Meta file_meta = 1088; }
extend google.protobuf.MessageOptions { Meta message_meta = 1088; }
extend google.protobuf.FieldOptions { Meta field_meta = 1088; }
extend google.protobuf.EnumOptions { Meta enum_meta = 1088; }
extend google.protobuf.EnumValueOptions { Meta enum_value_meta = 1088; }
`,
	"confluent/type/decimal.proto": `syntax = "proto3";
package confluent.type;
message Decimal {
  bytes value = 1;
  uint32 precision = 2;
  int32 scale = 3;
}
`,
	"confluent/type/variant.proto": `syntax = "proto3";
package confluent.type;
message Variant {
  bytes metadata = 1;
  bytes value = 2;
}
`,
	"google/type/calendar_period.proto": `syntax = "proto3"; package google.type; enum CalendarPeriod { CALENDAR_PERIOD_UNSPECIFIED = 0; DAY = 1; WEEK = 2; FORTNIGHT = 3; MONTH = 4; QUARTER = 5; HALF = 6; YEAR = 7; }`,
	"google/type/color.proto":           `syntax = "proto3"; package google.type; import "google/protobuf/wrappers.proto"; message Color { float red = 1; float green = 2; float blue = 3; google.protobuf.FloatValue alpha = 4; }`,
	"google/type/date.proto":            `syntax = "proto3"; package google.type; message Date { int32 year = 1; int32 month = 2; int32 day = 3; }`,
	"google/type/datetime.proto":        `syntax = "proto3"; package google.type; import "google/protobuf/duration.proto"; message DateTime { int32 year = 1; int32 month = 2; int32 day = 3; int32 hours = 4; int32 minutes = 5; int32 seconds = 6; int32 nanos = 7; oneof time_offset { google.protobuf.Duration utc_offset = 8; TimeZone time_zone = 9; } } message TimeZone { string id = 1; string version = 2; }`,
	"google/type/dayofweek.proto":       `syntax = "proto3"; package google.type; enum DayOfWeek { DAY_OF_WEEK_UNSPECIFIED = 0; MONDAY = 1; TUESDAY = 2; WEDNESDAY = 3; THURSDAY = 4; FRIDAY = 5; SATURDAY = 6; SUNDAY = 7; }`,
	"google/type/decimal.proto":         `syntax = "proto3"; package google.type; message Decimal { string value = 1; }`,
	"google/type/expr.proto":            `syntax = "proto3"; package google.type; message Expr { string expression = 1; string title = 2; string description = 3; string location = 4; }`,
	"google/type/fraction.proto":        `syntax = "proto3"; package google.type; message Fraction { int64 numerator = 1; int64 denominator = 2; }`,
	"google/type/interval.proto":        `syntax = "proto3"; package google.type; import "google/protobuf/timestamp.proto"; message Interval { google.protobuf.Timestamp start_time = 1; google.protobuf.Timestamp end_time = 2; }`,
	"google/type/latlng.proto":          `syntax = "proto3"; package google.type; message LatLng { double latitude = 1; double longitude = 2; }`,
	"google/type/money.proto":           `syntax = "proto3"; package google.type; message Money { string currency_code = 1; int64 units = 2; int32 nanos = 3; }`,
	"google/type/month.proto":           `syntax = "proto3"; package google.type; enum Month { MONTH_UNSPECIFIED = 0; JANUARY = 1; FEBRUARY = 2; MARCH = 3; APRIL = 4; MAY = 5; JUNE = 6; JULY = 7; AUGUST = 8; SEPTEMBER = 9; OCTOBER = 10; NOVEMBER = 11; DECEMBER = 12; }`,
	"google/type/phone_number.proto":    `syntax = "proto3"; package google.type; message PhoneNumber { message ShortCode { string region_code = 1; string number = 2; } oneof kind { string e164_number = 1; ShortCode short_code = 2; } string extension = 3; }`,
	"google/type/postal_address.proto":  `syntax = "proto3"; package google.type; message PostalAddress { int32 revision = 1; string region_code = 2; string language_code = 3; string postal_code = 4; string sorting_code = 5; string administrative_area = 6; string locality = 7; string sublocality = 8; repeated string address_lines = 9; repeated string recipients = 10; string organization = 11; }`,
	"google/type/quaternion.proto":      `syntax = "proto3"; package google.type; message Quaternion { double x = 1; double y = 2; double z = 3; double w = 4; }`,
	"google/type/timeofday.proto":       `syntax = "proto3"; package google.type; message TimeOfDay { int32 hours = 1; int32 minutes = 2; int32 seconds = 3; int32 nanos = 4; }`,
}
