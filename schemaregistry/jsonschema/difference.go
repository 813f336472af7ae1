package jsonschema

// diffType is one of Confluent's Difference.Type names: a change from the
// writer's schema (Confluent's "original") to the reader's ("update").
type diffType string

// The difference types, named and spelt as Confluent's Difference.Type.
const (
	idChanged                                            diffType = "ID_CHANGED"
	descriptionChanged                                   diffType = "DESCRIPTION_CHANGED"
	titleChanged                                         diffType = "TITLE_CHANGED"
	defaultChanged                                       diffType = "DEFAULT_CHANGED"
	schemaAdded                                          diffType = "SCHEMA_ADDED"
	schemaRemoved                                        diffType = "SCHEMA_REMOVED"
	typeExtended                                         diffType = "TYPE_EXTENDED"
	typeNarrowed                                         diffType = "TYPE_NARROWED"
	typeChanged                                          diffType = "TYPE_CHANGED"
	maxLengthAdded                                       diffType = "MAX_LENGTH_ADDED"
	maxLengthRemoved                                     diffType = "MAX_LENGTH_REMOVED"
	maxLengthIncreased                                   diffType = "MAX_LENGTH_INCREASED"
	maxLengthDecreased                                   diffType = "MAX_LENGTH_DECREASED"
	minLengthAdded                                       diffType = "MIN_LENGTH_ADDED"
	minLengthRemoved                                     diffType = "MIN_LENGTH_REMOVED"
	minLengthIncreased                                   diffType = "MIN_LENGTH_INCREASED"
	minLengthDecreased                                   diffType = "MIN_LENGTH_DECREASED"
	patternAdded                                         diffType = "PATTERN_ADDED"
	patternRemoved                                       diffType = "PATTERN_REMOVED"
	patternChanged                                       diffType = "PATTERN_CHANGED"
	maximumAdded                                         diffType = "MAXIMUM_ADDED"
	maximumRemoved                                       diffType = "MAXIMUM_REMOVED"
	maximumIncreased                                     diffType = "MAXIMUM_INCREASED"
	maximumDecreased                                     diffType = "MAXIMUM_DECREASED"
	minimumAdded                                         diffType = "MINIMUM_ADDED"
	minimumRemoved                                       diffType = "MINIMUM_REMOVED"
	minimumIncreased                                     diffType = "MINIMUM_INCREASED"
	minimumDecreased                                     diffType = "MINIMUM_DECREASED"
	exclusiveMaximumAdded                                diffType = "EXCLUSIVE_MAXIMUM_ADDED"
	exclusiveMaximumRemoved                              diffType = "EXCLUSIVE_MAXIMUM_REMOVED"
	exclusiveMaximumIncreased                            diffType = "EXCLUSIVE_MAXIMUM_INCREASED"
	exclusiveMaximumDecreased                            diffType = "EXCLUSIVE_MAXIMUM_DECREASED"
	exclusiveMinimumAdded                                diffType = "EXCLUSIVE_MINIMUM_ADDED"
	exclusiveMinimumRemoved                              diffType = "EXCLUSIVE_MINIMUM_REMOVED"
	exclusiveMinimumIncreased                            diffType = "EXCLUSIVE_MINIMUM_INCREASED"
	exclusiveMinimumDecreased                            diffType = "EXCLUSIVE_MINIMUM_DECREASED"
	multipleOfAdded                                      diffType = "MULTIPLE_OF_ADDED"
	multipleOfRemoved                                    diffType = "MULTIPLE_OF_REMOVED"
	multipleOfExpanded                                   diffType = "MULTIPLE_OF_EXPANDED"
	multipleOfReduced                                    diffType = "MULTIPLE_OF_REDUCED"
	multipleOfChanged                                    diffType = "MULTIPLE_OF_CHANGED"
	requiredAttributeAdded                               diffType = "REQUIRED_ATTRIBUTE_ADDED"
	requiredAttributeWithDefaultAdded                    diffType = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
	requiredAttributeRemoved                             diffType = "REQUIRED_ATTRIBUTE_REMOVED"
	maxPropertiesAdded                                   diffType = "MAX_PROPERTIES_ADDED"
	maxPropertiesRemoved                                 diffType = "MAX_PROPERTIES_REMOVED"
	maxPropertiesIncreased                               diffType = "MAX_PROPERTIES_INCREASED"
	maxPropertiesDecreased                               diffType = "MAX_PROPERTIES_DECREASED"
	minPropertiesAdded                                   diffType = "MIN_PROPERTIES_ADDED"
	minPropertiesRemoved                                 diffType = "MIN_PROPERTIES_REMOVED"
	minPropertiesIncreased                               diffType = "MIN_PROPERTIES_INCREASED"
	minPropertiesDecreased                               diffType = "MIN_PROPERTIES_DECREASED"
	additionalPropertiesAdded                            diffType = "ADDITIONAL_PROPERTIES_ADDED"
	additionalPropertiesRemoved                          diffType = "ADDITIONAL_PROPERTIES_REMOVED"
	additionalPropertiesExtended                         diffType = "ADDITIONAL_PROPERTIES_EXTENDED"
	additionalPropertiesNarrowed                         diffType = "ADDITIONAL_PROPERTIES_NARROWED"
	dependencyArrayAdded                                 diffType = "DEPENDENCY_ARRAY_ADDED"
	dependencyArrayRemoved                               diffType = "DEPENDENCY_ARRAY_REMOVED"
	dependencyArrayExtended                              diffType = "DEPENDENCY_ARRAY_EXTENDED"
	dependencyArrayNarrowed                              diffType = "DEPENDENCY_ARRAY_NARROWED"
	dependencyArrayChanged                               diffType = "DEPENDENCY_ARRAY_CHANGED"
	dependencySchemaAdded                                diffType = "DEPENDENCY_SCHEMA_ADDED"
	dependencySchemaRemoved                              diffType = "DEPENDENCY_SCHEMA_REMOVED"
	propertyAddedToOpenContentModel                      diffType = "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
	requiredPropertyAddedToOpenContentModel              diffType = "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
	requiredPropertyWithDefaultAddedToOpenContentModel   diffType = "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"
	optionalPropertyAddedToOpenContentModel              diffType = "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
	propertyWithEmptySchemaAddedToOpenContentModel       diffType = "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
	requiredPropertyAddedToUnopenContentModel            diffType = "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
	requiredPropertyWithDefaultAddedToUnopenContentModel diffType = "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
	optionalPropertyAddedToUnopenContentModel            diffType = "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
	propertyRemovedFromOpenContentModel                  diffType = "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL"
	propertyWithFalseRemovedFromClosedContentModel       diffType = "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	propertyRemovedFromClosedContentModel                diffType = "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	propertyRemovedIsCoveredByPartiallyOpenContentModel  diffType = "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	propertyRemovedNotCoveredByPartiallyOpenContentModel diffType = "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	propertyAddedIsCoveredByPartiallyOpenContentModel    diffType = "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	propertyAddedNotCoveredByPartiallyOpenContentModel   diffType = "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	reservedPropertyRemoved                              diffType = "RESERVED_PROPERTY_REMOVED"
	reservedPropertyConflictsWithProperty                diffType = "RESERVED_PROPERTY_CONFLICTS_WITH_PROPERTY"
	unevaluatedPropertiesAdded                           diffType = "UNEVALUATED_PROPERTIES_ADDED"
	unevaluatedPropertiesRemoved                         diffType = "UNEVALUATED_PROPERTIES_REMOVED"
	unevaluatedPropertiesExtended                        diffType = "UNEVALUATED_PROPERTIES_EXTENDED"
	unevaluatedPropertiesNarrowed                        diffType = "UNEVALUATED_PROPERTIES_NARROWED"
	maxItemsAdded                                        diffType = "MAX_ITEMS_ADDED"
	maxItemsRemoved                                      diffType = "MAX_ITEMS_REMOVED"
	maxItemsIncreased                                    diffType = "MAX_ITEMS_INCREASED"
	maxItemsDecreased                                    diffType = "MAX_ITEMS_DECREASED"
	minItemsAdded                                        diffType = "MIN_ITEMS_ADDED"
	minItemsRemoved                                      diffType = "MIN_ITEMS_REMOVED"
	minItemsIncreased                                    diffType = "MIN_ITEMS_INCREASED"
	minItemsDecreased                                    diffType = "MIN_ITEMS_DECREASED"
	maxContainsAdded                                     diffType = "MAX_CONTAINS_ADDED"
	maxContainsRemoved                                   diffType = "MAX_CONTAINS_REMOVED"
	maxContainsIncreased                                 diffType = "MAX_CONTAINS_INCREASED"
	maxContainsDecreased                                 diffType = "MAX_CONTAINS_DECREASED"
	minContainsAdded                                     diffType = "MIN_CONTAINS_ADDED"
	minContainsRemoved                                   diffType = "MIN_CONTAINS_REMOVED"
	minContainsIncreased                                 diffType = "MIN_CONTAINS_INCREASED"
	minContainsDecreased                                 diffType = "MIN_CONTAINS_DECREASED"
	uniqueItemsAdded                                     diffType = "UNIQUE_ITEMS_ADDED"
	uniqueItemsRemoved                                   diffType = "UNIQUE_ITEMS_REMOVED"
	additionalItemsAdded                                 diffType = "ADDITIONAL_ITEMS_ADDED"
	additionalItemsRemoved                               diffType = "ADDITIONAL_ITEMS_REMOVED"
	additionalItemsExtended                              diffType = "ADDITIONAL_ITEMS_EXTENDED"
	additionalItemsNarrowed                              diffType = "ADDITIONAL_ITEMS_NARROWED"
	unevaluatedItemsAdded                                diffType = "UNEVALUATED_ITEMS_ADDED"
	unevaluatedItemsRemoved                              diffType = "UNEVALUATED_ITEMS_REMOVED"
	unevaluatedItemsExtended                             diffType = "UNEVALUATED_ITEMS_EXTENDED"
	unevaluatedItemsNarrowed                             diffType = "UNEVALUATED_ITEMS_NARROWED"
	itemAddedToOpenContentModel                          diffType = "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
	itemWithEmptySchemaAddedToOpenContentModel           diffType = "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
	itemAddedToClosedContentModel                        diffType = "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL"
	itemRemovedFromOpenContentModel                      diffType = "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL"
	itemWithFalseRemovedFromClosedContentModel           diffType = "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	itemRemovedFromClosedContentModel                    diffType = "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"
	itemRemovedIsCoveredByPartiallyOpenContentModel      diffType = "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	itemRemovedNotCoveredByPartiallyOpenContentModel     diffType = "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	itemAddedIsCoveredByPartiallyOpenContentModel        diffType = "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	itemAddedNotCoveredByPartiallyOpenContentModel       diffType = "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
	enumArrayExtended                                    diffType = "ENUM_ARRAY_EXTENDED"
	enumArrayNarrowed                                    diffType = "ENUM_ARRAY_NARROWED"
	enumArrayChanged                                     diffType = "ENUM_ARRAY_CHANGED"
	combinedTypeExtended                                 diffType = "COMBINED_TYPE_EXTENDED"
	combinedTypeChanged                                  diffType = "COMBINED_TYPE_CHANGED"
	productTypeExtended                                  diffType = "PRODUCT_TYPE_EXTENDED"
	productTypeNarrowed                                  diffType = "PRODUCT_TYPE_NARROWED"
	sumTypeExtended                                      diffType = "SUM_TYPE_EXTENDED"
	sumTypeNarrowed                                      diffType = "SUM_TYPE_NARROWED"
	combinedTypeSubschemasChanged                        diffType = "COMBINED_TYPE_SUBSCHEMAS_CHANGED"
	notTypeExtended                                      diffType = "NOT_TYPE_EXTENDED"
	notTypeNarrowed                                      diffType = "NOT_TYPE_NARROWED"
)

// compatibleChanges are the differences a reader can take: Confluent's
// COMPATIBLE_CHANGES_STRICT, the set its default (STRICT) policy uses.
var compatibleChanges = setOf(
	idChanged, descriptionChanged, titleChanged, defaultChanged, schemaRemoved, typeExtended,

	maxLengthIncreased, maxLengthRemoved, minLengthDecreased, minLengthRemoved, patternRemoved,

	maximumIncreased, maximumRemoved, minimumDecreased, minimumRemoved,
	exclusiveMaximumIncreased, exclusiveMaximumRemoved, exclusiveMinimumDecreased,
	exclusiveMinimumRemoved, multipleOfReduced, multipleOfRemoved,

	requiredAttributeWithDefaultAdded, requiredAttributeRemoved, dependencyArrayNarrowed,
	dependencyArrayRemoved, dependencySchemaRemoved, maxPropertiesIncreased, maxPropertiesRemoved,
	minPropertiesDecreased, minPropertiesRemoved, additionalPropertiesAdded,
	additionalPropertiesExtended, unevaluatedPropertiesAdded, unevaluatedPropertiesExtended,
	propertyWithEmptySchemaAddedToOpenContentModel,
	requiredPropertyWithDefaultAddedToUnopenContentModel,
	optionalPropertyAddedToUnopenContentModel, propertyWithFalseRemovedFromClosedContentModel,
	propertyRemovedFromOpenContentModel, propertyAddedIsCoveredByPartiallyOpenContentModel,
	propertyRemovedIsCoveredByPartiallyOpenContentModel,

	maxItemsIncreased, maxItemsRemoved, minItemsDecreased, minItemsRemoved, maxContainsIncreased,
	maxContainsRemoved, minContainsDecreased, minContainsRemoved, uniqueItemsRemoved,
	additionalItemsAdded, additionalItemsExtended, unevaluatedItemsAdded, unevaluatedItemsExtended,
	itemWithEmptySchemaAddedToOpenContentModel, itemAddedToClosedContentModel,
	itemWithFalseRemovedFromClosedContentModel, itemRemovedFromOpenContentModel,
	itemAddedIsCoveredByPartiallyOpenContentModel, itemRemovedIsCoveredByPartiallyOpenContentModel,

	enumArrayExtended,

	combinedTypeExtended, productTypeNarrowed, sumTypeExtended, notTypeNarrowed,
)

func setOf(ts ...diffType) map[diffType]bool {
	m := make(map[diffType]bool, len(ts))
	for _, t := range ts {
		m[t] = true
	}
	return m
}

// The families Confluent words its messages by.
var (
	keywordAddedOrRemoved = setOf(maximumAdded, minimumAdded, exclusiveMaximumAdded,
		exclusiveMinimumAdded, multipleOfAdded, maxLengthAdded, minLengthAdded, patternAdded,
		requiredAttributeAdded, maxPropertiesAdded, minPropertiesAdded, dependencyArrayAdded,
		dependencySchemaAdded, maxItemsAdded, minItemsAdded, maxContainsAdded, minContainsAdded,
		uniqueItemsAdded, additionalItemsRemoved, additionalPropertiesRemoved,
		unevaluatedPropertiesRemoved, unevaluatedItemsRemoved)
	valueIncreased = setOf(minLengthIncreased, minimumIncreased, exclusiveMinimumIncreased,
		minPropertiesIncreased, multipleOfExpanded, minItemsIncreased, minContainsIncreased)
	valueDecreased = setOf(maxLengthDecreased, maximumDecreased, maxItemsDecreased,
		maxContainsDecreased, exclusiveMaximumDecreased, maxPropertiesDecreased)
	typeNarrowedSet = setOf(additionalItemsNarrowed, enumArrayNarrowed, sumTypeNarrowed,
		additionalPropertiesNarrowed, unevaluatedPropertiesNarrowed, unevaluatedItemsNarrowed)
	valueChanged   = setOf(patternChanged, multipleOfChanged, dependencyArrayChanged)
	typeChangedSet = setOf(typeChanged, typeNarrowed, combinedTypeChanged,
		combinedTypeSubschemasChanged, enumArrayChanged)
	typeExtendedSet = setOf(dependencyArrayExtended, productTypeExtended, sumTypeExtended,
		notTypeExtended)
	addedToOpen = setOf(requiredPropertyAddedToOpenContentModel,
		requiredPropertyWithDefaultAddedToOpenContentModel,
		optionalPropertyAddedToOpenContentModel, itemAddedToOpenContentModel)
)

// difference is one change found at a JSON path ("#/properties/a").
type difference struct {
	typ  diffType
	path string
}

// message is the difference as Confluent's verbose compatibility answer
// prints it (Difference.toString, its odd closing quote included), with the
// reader's and the writer's schema called by the names given ("new" and
// "old" in Confluent's answers, in the order its check puts them).
func (d difference) message(reader, writer string) string {
	return `{errorType:"` + string(d.typ) + `", description:"` + d.description(reader, writer) + `'}`
}

// description is Confluent's Difference.error text, with r the reader's
// name and w the writer's.
func (d difference) description(r, w string) string {
	p, t := d.path, d.typ
	switch {
	case keywordAddedOrRemoved[t]:
		return "The keyword at path '" + p + "' in the " + r + " schema is not present in the " + w + " schema"
	case valueIncreased[t]:
		return "The value at path '" + p + "' in the " + r + " schema is more than its value in the " + w + " schema"
	case valueDecreased[t]:
		return "The value at path '" + p + "' in the " + r + " schema is less than its value in the " + w + " schema"
	case valueChanged[t]:
		return "The value at path '" + p + "' is different between the " + r + " and " + w + " schema"
	case typeNarrowedSet[t]:
		return "An array or combined type at path '" + p + "' has fewer elements in the " + r + " schema than the " + w + " schema"
	case typeExtendedSet[t]:
		return "An array or combined type at path '" + p + "' has more elements in the " + r + " schema than the " + w + " schema"
	case typeChangedSet[t]:
		return "A type at path '" + p + "' is different between the " + r + " schema and the " + w + " schema"
	case addedToOpen[t]:
		return "The " + r + " schema has an open content model and has a property or item at path '" + p + "' which is missing in the " + w + " schema"
	case t == requiredPropertyAddedToUnopenContentModel:
		return "The " + r + " schema has an unopen content model and has a required property at path '" + p + "' which is missing in the " + w + " schema"
	case t == propertyRemovedFromClosedContentModel, t == itemRemovedFromClosedContentModel:
		return "The " + r + " has a closed content model and is missing a property or item present at path '" + p + "' in the " + w + " schema"
	case t == propertyRemovedNotCoveredByPartiallyOpenContentModel, t == itemRemovedNotCoveredByPartiallyOpenContentModel:
		return "A property or item is missing in the " + r + " schema but present at path '" + p + "' in the " + w + " schema and is not covered by its partially open content model"
	case t == propertyAddedNotCoveredByPartiallyOpenContentModel, t == itemAddedNotCoveredByPartiallyOpenContentModel:
		return "The " + r + " schema has a property or item at path '" + p + "' which is missing in the " + w + " schema and is not covered by its partially open content model"
	case t == reservedPropertyRemoved:
		return "The " + r + " schema has reserved property '" + p + "' removed from its metadata which is present in the " + w + " schema."
	case t == reservedPropertyConflictsWithProperty:
		return "The " + r + " schema has property at path '" + p + "' that conflicts with the reserved properties which is missing in the " + w + " schema."
	}
	return ""
}
