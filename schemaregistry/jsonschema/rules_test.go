package jsonschema

import (
	"sort"
	"strings"
	"testing"
)

// TestRules has one case per Confluent Difference type the differ
// produces, named after it: the writer's schema (Confluent's "original"),
// the reader's ("update"), every difference Confluent's differ finds
// between them and Confluent's verdict under its default (STRICT) policy.
// PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL (deprecated) and the two
// RESERVED_PROPERTY types (data contracts' reserved fields) are never
// produced by Confluent's differ either.
func TestRules(t *testing.T) {
	const d2020 = `"$schema":"https://json-schema.org/draft/2020-12/schema",`
	for _, tc := range []struct {
		name             string
		original, update string
		changes          []string
		compatible       bool
	}{
		{"ID_CHANGED", `{"$id":"a"}`, `{"$id":"b"}`, []string{"ID_CHANGED #/"}, true},
		{"DESCRIPTION_CHANGED", `{"description":"a"}`, `{"description":"b"}`, []string{"DESCRIPTION_CHANGED #/"}, true},
		{"TITLE_CHANGED", `{"title":"a"}`, `{"title":"b"}`, []string{"TITLE_CHANGED #/"}, true},
		{"DEFAULT_CHANGED", `{"type":"string","default":"a"}`, `{"type":"string","default":"b"}`, []string{"DEFAULT_CHANGED #/"}, true},
		{"SCHEMA_ADDED", `{"type":"array"}`, `{"type":"array","items":{"type":"string"}}`, []string{"SCHEMA_ADDED #/items"}, false},
		{"SCHEMA_REMOVED", `{"type":"array","items":{"type":"string"}}`, `{"type":"array"}`, []string{"SCHEMA_REMOVED #/items"}, true},
		{"TYPE_EXTENDED", `{"type":"integer"}`, `{"type":"number"}`, []string{"TYPE_EXTENDED #/"}, true},
		{"TYPE_NARROWED", `{"type":"number"}`, `{"type":"integer"}`, []string{"TYPE_NARROWED #/"}, false},
		{"TYPE_CHANGED", `{"type":"object"}`, `{"type":"array"}`, []string{"TYPE_CHANGED #/"}, false},

		{"MAX_LENGTH_ADDED", `{"type":"string"}`, `{"type":"string","maxLength":3}`, []string{"MAX_LENGTH_ADDED #/maxLength"}, false},
		{"MAX_LENGTH_REMOVED", `{"type":"string","maxLength":3}`, `{"type":"string"}`, []string{"MAX_LENGTH_REMOVED #/maxLength"}, true},
		{"MAX_LENGTH_INCREASED", `{"type":"string","maxLength":3}`, `{"type":"string","maxLength":4}`, []string{"MAX_LENGTH_INCREASED #/maxLength"}, true},
		{"MAX_LENGTH_DECREASED", `{"type":"string","maxLength":4}`, `{"type":"string","maxLength":3}`, []string{"MAX_LENGTH_DECREASED #/maxLength"}, false},
		{"MIN_LENGTH_ADDED", `{"type":"string"}`, `{"type":"string","minLength":3}`, []string{"MIN_LENGTH_ADDED #/minLength"}, false},
		{"MIN_LENGTH_REMOVED", `{"type":"string","minLength":3}`, `{"type":"string"}`, []string{"MIN_LENGTH_REMOVED #/minLength"}, true},
		{"MIN_LENGTH_INCREASED", `{"type":"string","minLength":3}`, `{"type":"string","minLength":4}`, []string{"MIN_LENGTH_INCREASED #/minLength"}, false},
		{"MIN_LENGTH_DECREASED", `{"type":"string","minLength":4}`, `{"type":"string","minLength":3}`, []string{"MIN_LENGTH_DECREASED #/minLength"}, true},
		{"PATTERN_ADDED", `{"type":"string"}`, `{"type":"string","pattern":"^a"}`, []string{"PATTERN_ADDED #/pattern"}, false},
		{"PATTERN_REMOVED", `{"type":"string","pattern":"^a"}`, `{"type":"string"}`, []string{"PATTERN_REMOVED #/pattern"}, true},
		{"PATTERN_CHANGED", `{"type":"string","pattern":"^a"}`, `{"type":"string","pattern":"^b"}`, []string{"PATTERN_CHANGED #/pattern"}, false},

		{"MAXIMUM_ADDED", `{"type":"number"}`, `{"type":"number","maximum":10}`, []string{"MAXIMUM_ADDED #/maximum"}, false},
		{"MAXIMUM_REMOVED", `{"type":"number","maximum":10}`, `{"type":"number"}`, []string{"MAXIMUM_REMOVED #/maximum"}, true},
		{"MAXIMUM_INCREASED", `{"type":"number","maximum":10}`, `{"type":"number","maximum":11}`, []string{"MAXIMUM_INCREASED #/maximum"}, true},
		{"MAXIMUM_DECREASED", `{"type":"number","maximum":11}`, `{"type":"number","maximum":10}`, []string{"MAXIMUM_DECREASED #/maximum"}, false},
		{"MINIMUM_ADDED", `{"type":"number"}`, `{"type":"number","minimum":10}`, []string{"MINIMUM_ADDED #/minimum"}, false},
		{"MINIMUM_REMOVED", `{"type":"number","minimum":10}`, `{"type":"number"}`, []string{"MINIMUM_REMOVED #/minimum"}, true},
		{"MINIMUM_INCREASED", `{"type":"number","minimum":10}`, `{"type":"number","minimum":11}`, []string{"MINIMUM_INCREASED #/minimum"}, false},
		{"MINIMUM_DECREASED", `{"type":"number","minimum":11}`, `{"type":"number","minimum":10}`, []string{"MINIMUM_DECREASED #/minimum"}, true},
		{"EXCLUSIVE_MAXIMUM_ADDED", `{"type":"number"}`, `{"type":"number","exclusiveMaximum":10}`, []string{"EXCLUSIVE_MAXIMUM_ADDED #/exclusiveMaximum"}, false},
		{"EXCLUSIVE_MAXIMUM_REMOVED", `{"type":"number","exclusiveMaximum":10}`, `{"type":"number"}`, []string{"EXCLUSIVE_MAXIMUM_REMOVED #/exclusiveMaximum"}, true},
		{"EXCLUSIVE_MAXIMUM_INCREASED", `{"type":"number","exclusiveMaximum":10}`, `{"type":"number","exclusiveMaximum":11}`, []string{"EXCLUSIVE_MAXIMUM_INCREASED #/exclusiveMaximum"}, true},
		// Confluent compares a lowered exclusiveMaximum with the update's
		// maximum (a slip in NumberSchemaDiff: without a maximum it throws,
		// with a larger one it misses the change); floe compares the two
		// exclusiveMaximums, and agrees with Confluent on this case.
		{"EXCLUSIVE_MAXIMUM_DECREASED", `{"type":"number","exclusiveMaximum":11,"maximum":5}`, `{"type":"number","exclusiveMaximum":10,"maximum":5}`, []string{"EXCLUSIVE_MAXIMUM_DECREASED #/exclusiveMaximum"}, false},
		{"EXCLUSIVE_MINIMUM_ADDED", `{"type":"number"}`, `{"type":"number","exclusiveMinimum":10}`, []string{"EXCLUSIVE_MINIMUM_ADDED #/exclusiveMinimum"}, false},
		{"EXCLUSIVE_MINIMUM_REMOVED", `{"type":"number","exclusiveMinimum":10}`, `{"type":"number"}`, []string{"EXCLUSIVE_MINIMUM_REMOVED #/exclusiveMinimum"}, true},
		{"EXCLUSIVE_MINIMUM_INCREASED", `{"type":"number","exclusiveMinimum":10}`, `{"type":"number","exclusiveMinimum":11}`, []string{"EXCLUSIVE_MINIMUM_INCREASED #/exclusiveMinimum"}, false},
		{"EXCLUSIVE_MINIMUM_DECREASED", `{"type":"number","exclusiveMinimum":11}`, `{"type":"number","exclusiveMinimum":10}`, []string{"EXCLUSIVE_MINIMUM_DECREASED #/exclusiveMinimum"}, true},
		{"MULTIPLE_OF_ADDED", `{"type":"number"}`, `{"type":"number","multipleOf":2}`, []string{"MULTIPLE_OF_ADDED #/multipleOf"}, false},
		{"MULTIPLE_OF_REMOVED", `{"type":"number","multipleOf":2}`, `{"type":"number"}`, []string{"MULTIPLE_OF_REMOVED #/multipleOf"}, true},
		{"MULTIPLE_OF_EXPANDED", `{"type":"number","multipleOf":2}`, `{"type":"number","multipleOf":10}`, []string{"MULTIPLE_OF_EXPANDED #/multipleOf"}, false},
		{"MULTIPLE_OF_REDUCED", `{"type":"number","multipleOf":10}`, `{"type":"number","multipleOf":0.5}`, []string{"MULTIPLE_OF_REDUCED #/multipleOf"}, true},
		{"MULTIPLE_OF_CHANGED", `{"type":"number","multipleOf":10}`, `{"type":"number","multipleOf":3}`, []string{"MULTIPLE_OF_CHANGED #/multipleOf"}, false},

		{"REQUIRED_ATTRIBUTE_ADDED", `{"properties":{"a":{"type":"string"}}}`, `{"properties":{"a":{"type":"string"}},"required":["a"]}`, []string{"REQUIRED_ATTRIBUTE_ADDED #/required/a"}, false},
		{"REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", `{"properties":{"a":{"type":"string","default":"x"}}}`, `{"properties":{"a":{"type":"string","default":"x"}},"required":["a"]}`, []string{"REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED #/required/a"}, true},
		{"REQUIRED_ATTRIBUTE_REMOVED", `{"properties":{"a":{"type":"string"}},"required":["a"]}`, `{"properties":{"a":{"type":"string"}}}`, []string{"REQUIRED_ATTRIBUTE_REMOVED #/required/a"}, true},
		{"MAX_PROPERTIES_ADDED", `{"type":"object"}`, `{"type":"object","maxProperties":2}`, []string{"MAX_PROPERTIES_ADDED #/maxProperties"}, false},
		{"MAX_PROPERTIES_REMOVED", `{"type":"object","maxProperties":2}`, `{"type":"object"}`, []string{"MAX_PROPERTIES_REMOVED #/maxProperties"}, true},
		{"MAX_PROPERTIES_INCREASED", `{"maxProperties":1}`, `{"maxProperties":2}`, []string{"MAX_PROPERTIES_INCREASED #/maxProperties"}, true},
		{"MAX_PROPERTIES_DECREASED", `{"maxProperties":2}`, `{"maxProperties":1}`, []string{"MAX_PROPERTIES_DECREASED #/maxProperties"}, false},
		{"MIN_PROPERTIES_ADDED", `{"type":"object"}`, `{"type":"object","minProperties":2}`, []string{"MIN_PROPERTIES_ADDED #/minProperties"}, false},
		{"MIN_PROPERTIES_REMOVED", `{"type":"object","minProperties":2}`, `{"type":"object"}`, []string{"MIN_PROPERTIES_REMOVED #/minProperties"}, true},
		{"MIN_PROPERTIES_INCREASED", `{"minProperties":1}`, `{"minProperties":2}`, []string{"MIN_PROPERTIES_INCREASED #/minProperties"}, false},
		{"MIN_PROPERTIES_DECREASED", `{"minProperties":2}`, `{"minProperties":1}`, []string{"MIN_PROPERTIES_DECREASED #/minProperties"}, true},
		{"ADDITIONAL_PROPERTIES_ADDED", `{"type":"object","additionalProperties":false}`, `{"type":"object"}`, []string{"ADDITIONAL_PROPERTIES_ADDED #/additionalProperties"}, true},
		{"ADDITIONAL_PROPERTIES_REMOVED", `{"additionalProperties":true}`, `{"additionalProperties":false}`, []string{"ADDITIONAL_PROPERTIES_REMOVED #/additionalProperties"}, false},
		{"ADDITIONAL_PROPERTIES_EXTENDED", `{"additionalProperties":{"type":"number"}}`, `{"additionalProperties":true}`, []string{"ADDITIONAL_PROPERTIES_EXTENDED #/additionalProperties"}, true},
		{"ADDITIONAL_PROPERTIES_NARROWED", `{"additionalProperties":true}`, `{"additionalProperties":{"type":"number"}}`, []string{"ADDITIONAL_PROPERTIES_NARROWED #/additionalProperties"}, false},
		{"DEPENDENCY_ARRAY_ADDED", `{"dependencies":{}}`, `{"dependencies":{"a":["b"]}}`, []string{"DEPENDENCY_ARRAY_ADDED #/dependencies/a"}, false},
		{"DEPENDENCY_ARRAY_REMOVED", `{"dependencies":{"a":["b"]}}`, `{"type":"object"}`, []string{"DEPENDENCY_ARRAY_REMOVED #/dependencies/a"}, true},
		{"DEPENDENCY_ARRAY_EXTENDED", `{"dependencies":{"a":["b"]}}`, `{"dependencies":{"a":["b","c"]}}`, []string{"DEPENDENCY_ARRAY_EXTENDED #/dependencies/a"}, false},
		{"DEPENDENCY_ARRAY_NARROWED", `{"dependencies":{"a":["b","c"]}}`, `{"dependencies":{"a":["b"]}}`, []string{"DEPENDENCY_ARRAY_NARROWED #/dependencies/a"}, true},
		{"DEPENDENCY_ARRAY_CHANGED", `{"dependencies":{"a":["b"]}}`, `{"dependencies":{"a":["c"]}}`, []string{"DEPENDENCY_ARRAY_CHANGED #/dependencies/a"}, false},
		{"DEPENDENCY_SCHEMA_ADDED", `{"dependencies":{"a":{"type":"string"}}}`, `{"dependencies":{"a":{"type":"string"},"b":{"type":"string"}}}`, []string{"DEPENDENCY_SCHEMA_ADDED #/dependencies/b"}, false},
		{"DEPENDENCY_SCHEMA_REMOVED", `{"dependencies":{"a":{"type":"string"},"b":{"type":"string"}}}`, `{"dependencies":{"a":{"type":"string"}}}`, []string{"DEPENDENCY_SCHEMA_REMOVED #/dependencies/b"}, true},

		{"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", `{"properties":{}}`, `{"properties":{"a":{"type":"string"}},"required":["a"]}`, []string{"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/a"}, false},
		{"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL", `{"properties":{}}`, `{"properties":{"a":{"type":"string","default":"x"}},"required":["a"]}`, []string{"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL #/properties/a"}, false},
		{"OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", `{"properties":{}}`, `{"properties":{"a":{"type":"string"}}}`, []string{"OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL #/properties/a"}, false},
		{"PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", `{"properties":{}}`, `{"properties":{"a":{}}}`, []string{"PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL #/properties/a"}, true},
		{"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", `{"properties":{},"additionalProperties":false}`, `{"properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`, []string{"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/a"}, false},
		{"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL", `{"properties":{},"additionalProperties":false}`, `{"properties":{"a":{"type":"string","default":"x"}},"required":["a"],"additionalProperties":false}`, []string{"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/a"}, true},
		{"OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", `{"properties":{},"additionalProperties":false}`, `{"properties":{"a":{"type":"string"}},"additionalProperties":false}`, []string{"OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/a"}, true},
		{"PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", `{"properties":{"a":{"type":"string"}}}`, `{"properties":{}}`, []string{"PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL #/properties/a"}, true},
		{"PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", `{"properties":{"a":false},"additionalProperties":false}`, `{"properties":{},"additionalProperties":false}`, []string{"PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/a"}, true},
		{"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", `{"properties":{"a":{"type":"string"}},"additionalProperties":false}`, `{"properties":{},"additionalProperties":false}`, []string{"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL #/properties/a"}, false},
		{"PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", `{"properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}`, `{"properties":{},"additionalProperties":{"type":"string"}}`, []string{"PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/a"}, true},
		{"PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", `{"properties":{"a":{"type":"number"}},"patternProperties":{"^a":{"type":"string"}}}`, `{"properties":{},"patternProperties":{"^a":{"type":"string"}}}`, []string{"TYPE_CHANGED #/properties/a", "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/a"}, false},
		{"PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", `{"properties":{},"additionalProperties":{"type":"string"}}`, `{"properties":{"a":{"type":"string"}},"additionalProperties":{"type":"string"}}`, []string{"PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/a", "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/a"}, true},
		{"PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", `{"properties":{},"additionalProperties":{"type":"string"}}`, `{"properties":{"a":{"type":"number"}},"additionalProperties":{"type":"string"}}`, []string{"TYPE_CHANGED #/properties/a", "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/properties/a", "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL #/properties/a"}, false},
		{"UNEVALUATED_PROPERTIES_ADDED", `{` + d2020 + `"type":"object","unevaluatedProperties":false}`, `{` + d2020 + `"type":"object"}`, []string{"UNEVALUATED_PROPERTIES_ADDED #/unevaluatedProperties"}, true},
		{"UNEVALUATED_PROPERTIES_REMOVED", `{` + d2020 + `"type":"object"}`, `{` + d2020 + `"type":"object","unevaluatedProperties":false}`, []string{"UNEVALUATED_PROPERTIES_REMOVED #/unevaluatedProperties"}, false},
		{"UNEVALUATED_PROPERTIES_EXTENDED", `{` + d2020 + `"type":"object","unevaluatedProperties":{"type":"string"}}`, `{` + d2020 + `"type":"object"}`, []string{"UNEVALUATED_PROPERTIES_EXTENDED #/unevaluatedProperties"}, true},
		{"UNEVALUATED_PROPERTIES_NARROWED", `{` + d2020 + `"type":"object"}`, `{` + d2020 + `"type":"object","unevaluatedProperties":{"type":"string"}}`, []string{"UNEVALUATED_PROPERTIES_NARROWED #/unevaluatedProperties"}, false},

		{"MAX_ITEMS_ADDED", `{"type":"array"}`, `{"type":"array","maxItems":2}`, []string{"MAX_ITEMS_ADDED #/maxItems"}, false},
		{"MAX_ITEMS_REMOVED", `{"type":"array","maxItems":2}`, `{"type":"array"}`, []string{"MAX_ITEMS_REMOVED #/maxItems"}, true},
		{"MAX_ITEMS_INCREASED", `{"type":"array","maxItems":1}`, `{"type":"array","maxItems":2}`, []string{"MAX_ITEMS_INCREASED #/maxItems"}, true},
		{"MAX_ITEMS_DECREASED", `{"type":"array","maxItems":2}`, `{"type":"array","maxItems":1}`, []string{"MAX_ITEMS_DECREASED #/maxItems"}, false},
		{"MIN_ITEMS_ADDED", `{"type":"array"}`, `{"type":"array","minItems":2}`, []string{"MIN_ITEMS_ADDED #/minItems"}, false},
		{"MIN_ITEMS_REMOVED", `{"type":"array","minItems":1}`, `{"type":"array"}`, []string{"MIN_ITEMS_REMOVED #/minItems"}, true},
		{"MIN_ITEMS_INCREASED", `{"type":"array","minItems":1}`, `{"type":"array","minItems":2}`, []string{"MIN_ITEMS_INCREASED #/minItems"}, false},
		{"MIN_ITEMS_DECREASED", `{"type":"array","minItems":2}`, `{"type":"array","minItems":1}`, []string{"MIN_ITEMS_DECREASED #/minItems"}, true},
		{"MAX_CONTAINS_ADDED", `{` + d2020 + `"type":"array","contains":{"type":"number"}}`, `{` + d2020 + `"type":"array","contains":{"type":"number"},"maxContains":2}`, []string{"MAX_CONTAINS_ADDED #/maxContains"}, false},
		{"MAX_CONTAINS_REMOVED", `{` + d2020 + `"type":"array","contains":{"type":"number"},"maxContains":2}`, `{` + d2020 + `"type":"array","contains":{"type":"number"}}`, []string{"MAX_CONTAINS_REMOVED #/maxContains"}, true},
		{"MAX_CONTAINS_INCREASED", `{` + d2020 + `"type":"array","contains":{"type":"number"},"maxContains":2}`, `{` + d2020 + `"type":"array","contains":{"type":"number"},"maxContains":3}`, []string{"MAX_CONTAINS_INCREASED #/maxContains"}, true},
		{"MAX_CONTAINS_DECREASED", `{` + d2020 + `"type":"array","contains":{"type":"number"},"maxContains":3}`, `{` + d2020 + `"type":"array","contains":{"type":"number"},"maxContains":2}`, []string{"MAX_CONTAINS_DECREASED #/maxContains"}, false},
		{"MIN_CONTAINS_ADDED", `{"type":"array"}`, `{"type":"array","minContains":2}`, []string{"MIN_CONTAINS_ADDED #/minContains"}, false},
		{"MIN_CONTAINS_REMOVED", `{"type":"array","minContains":2}`, `{"type":"array"}`, []string{"MIN_CONTAINS_REMOVED #/minContains"}, true},
		{"MIN_CONTAINS_INCREASED", `{` + d2020 + `"type":"array","contains":{"type":"number"},"minContains":1}`, `{` + d2020 + `"type":"array","contains":{"type":"number"},"minContains":2}`, []string{"MIN_CONTAINS_INCREASED #/minContains"}, false},
		{"MIN_CONTAINS_DECREASED", `{` + d2020 + `"type":"array","contains":{"type":"number"},"minContains":2}`, `{` + d2020 + `"type":"array","contains":{"type":"number"},"minContains":1}`, []string{"MIN_CONTAINS_DECREASED #/minContains"}, true},
		{"UNIQUE_ITEMS_ADDED", `{"type":"array"}`, `{"type":"array","uniqueItems":true}`, []string{"UNIQUE_ITEMS_ADDED #/uniqueItems"}, false},
		{"UNIQUE_ITEMS_REMOVED", `{"type":"array","uniqueItems":true}`, `{"type":"array"}`, []string{"UNIQUE_ITEMS_REMOVED #/uniqueItems"}, true},
		{"ADDITIONAL_ITEMS_ADDED", `{"type":"array","items":[{}],"additionalItems":false}`, `{"type":"array","items":[{}]}`, []string{"ADDITIONAL_ITEMS_ADDED #/additionalItems"}, true},
		{"ADDITIONAL_ITEMS_REMOVED", `{"additionalItems":true}`, `{"additionalItems":false}`, []string{"ADDITIONAL_ITEMS_REMOVED #/additionalItems"}, false},
		{"ADDITIONAL_ITEMS_EXTENDED", `{"type":"array","items":[{}],"additionalItems":{"type":"number"}}`, `{"type":"array","items":[{}]}`, []string{"ADDITIONAL_ITEMS_EXTENDED #/additionalItems"}, true},
		{"ADDITIONAL_ITEMS_NARROWED", `{"type":"array","items":[{}]}`, `{"type":"array","items":[{}],"additionalItems":{"type":"number"}}`, []string{"ADDITIONAL_ITEMS_NARROWED #/additionalItems"}, false},
		{"UNEVALUATED_ITEMS_ADDED", `{` + d2020 + `"type":"array","unevaluatedItems":false}`, `{` + d2020 + `"type":"array"}`, []string{"UNEVALUATED_ITEMS_ADDED #/unevaluatedItems"}, true},
		{"UNEVALUATED_ITEMS_REMOVED", `{` + d2020 + `"type":"array"}`, `{` + d2020 + `"type":"array","unevaluatedItems":false}`, []string{"UNEVALUATED_ITEMS_REMOVED #/unevaluatedItems"}, false},
		{"UNEVALUATED_ITEMS_EXTENDED", `{` + d2020 + `"type":"array","unevaluatedItems":{"type":"string"}}`, `{` + d2020 + `"type":"array"}`, []string{"UNEVALUATED_ITEMS_EXTENDED #/unevaluatedItems"}, true},
		{"UNEVALUATED_ITEMS_NARROWED", `{` + d2020 + `"type":"array"}`, `{` + d2020 + `"type":"array","unevaluatedItems":{"type":"string"}}`, []string{"UNEVALUATED_ITEMS_NARROWED #/unevaluatedItems"}, false},
		{"ITEM_ADDED_TO_OPEN_CONTENT_MODEL", `{"type":"array","items":[{}]}`, `{"type":"array","items":[{},{"type":"string"}]}`, []string{"ITEM_ADDED_TO_OPEN_CONTENT_MODEL #/items/1"}, false},
		{"ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", `{"type":"array","items":[{}]}`, `{"type":"array","items":[{},{}]}`, []string{"ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL #/items/1"}, true},
		{"ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", `{"type":"array","items":[{}],"additionalItems":false}`, `{"type":"array","items":[{},{"type":"string"}],"additionalItems":false}`, []string{"ITEM_ADDED_TO_CLOSED_CONTENT_MODEL #/items/1"}, true},
		{"ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL", `{"type":"array","items":[{},{"type":"string"}]}`, `{"type":"array","items":[{}]}`, []string{"ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL #/items/1"}, true},
		{"ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", `{"type":"array","items":[{},false],"additionalItems":false}`, `{"type":"array","items":[{}],"additionalItems":false}`, []string{"ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL #/items/1"}, true},
		{"ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", `{"type":"array","items":[{},{"type":"string"}],"additionalItems":false}`, `{"type":"array","items":[{}],"additionalItems":false}`, []string{"ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL #/items/1"}, false},
		{"ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", `{"type":"array","items":[{},{"type":"string"}],"additionalItems":{"type":"string"}}`, `{"type":"array","items":[{}],"additionalItems":{"type":"string"}}`, []string{"ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1"}, true},
		{"ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", `{"type":"array","items":[{},{"type":"number"}],"additionalItems":{"type":"string"}}`, `{"type":"array","items":[{}],"additionalItems":{"type":"string"}}`, []string{"TYPE_CHANGED #/items/1", "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1"}, false},
		{"ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", `{"type":"array","items":[{}],"additionalItems":{"type":"string"}}`, `{"type":"array","items":[{},{"type":"string"}],"additionalItems":{"type":"string"}}`, []string{"ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1"}, true},
		{"ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", `{"type":"array","items":[{}],"additionalItems":{"type":"string"}}`, `{"type":"array","items":[{},{"type":"number"}],"additionalItems":{"type":"string"}}`, []string{"TYPE_CHANGED #/items/1", "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL #/items/1"}, false},

		{"ENUM_ARRAY_EXTENDED", `{"enum":["a"]}`, `{"enum":["a","b"]}`, []string{"ENUM_ARRAY_EXTENDED #/enum"}, true},
		{"ENUM_ARRAY_NARROWED", `{"enum":["a","b"]}`, `{"enum":["a"]}`, []string{"ENUM_ARRAY_NARROWED #/enum"}, false},
		{"ENUM_ARRAY_CHANGED", `{"enum":["a"]}`, `{"enum":["b"]}`, []string{"ENUM_ARRAY_CHANGED #/enum"}, false},
		{"ENUM_ARRAY_CHANGED/const", `{"const":"a"}`, `{"const":"b"}`, []string{"ENUM_ARRAY_CHANGED #/const"}, false},

		{"COMBINED_TYPE_EXTENDED", `{"oneOf":[{"type":"string"},{"type":"number"}]}`, `{"anyOf":[{"type":"string"},{"type":"number"}]}`, []string{"COMBINED_TYPE_EXTENDED #/"}, true},
		{"COMBINED_TYPE_CHANGED", `{"anyOf":[{"type":"string"},{"type":"number"}]}`, `{"oneOf":[{"type":"string"},{"type":"number"}]}`, []string{"COMBINED_TYPE_CHANGED #/"}, false},
		{"PRODUCT_TYPE_EXTENDED", `{"allOf":[{"type":"string"}]}`, `{"allOf":[{"type":"string"},{"maxLength":3}]}`, []string{"PRODUCT_TYPE_EXTENDED #/"}, false},
		{"PRODUCT_TYPE_NARROWED", `{"allOf":[{"type":"string"},{"maxLength":3}]}`, `{"allOf":[{"type":"string"}]}`, []string{"PRODUCT_TYPE_NARROWED #/"}, true},
		{"SUM_TYPE_EXTENDED", `{"oneOf":[{"type":"string"}]}`, `{"oneOf":[{"type":"string"},{"type":"number"}]}`, []string{"SUM_TYPE_EXTENDED #/"}, true},
		{"SUM_TYPE_NARROWED", `{"oneOf":[{"type":"string"},{"type":"number"}]}`, `{"oneOf":[{"type":"string"}]}`, []string{"SUM_TYPE_NARROWED #/"}, false},
		{"COMBINED_TYPE_SUBSCHEMAS_CHANGED", `{"oneOf":[{"type":"string"},{"type":"number"}]}`, `{"oneOf":[{"type":"string"},{"type":"boolean"}]}`, []string{"COMBINED_TYPE_SUBSCHEMAS_CHANGED #/"}, false},
		{"NOT_TYPE_EXTENDED", `{"not":{"type":"integer"}}`, `{"not":{"type":"number"}}`, []string{"NOT_TYPE_EXTENDED #/not"}, false},
		{"NOT_TYPE_NARROWED", `{"not":{"type":"number"}}`, `{"not":{"type":"integer"}}`, []string{"NOT_TYPE_NARROWED #/not"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, u := mustParse(t, tc.original), mustParse(t, tc.update)
			want := append([]string{}, tc.changes...)
			sort.Strings(want)
			if got := changesOf(o, u); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("changes %q, want %q", got, want)
			}
			msgs := New().Compatible(u, o)
			if (len(msgs) == 0) != tc.compatible {
				t.Errorf("compatible %v, want %v: %q", len(msgs) == 0, tc.compatible, msgs)
			}
		})
	}
}
