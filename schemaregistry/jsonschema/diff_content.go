package jsonschema

import "strconv"

// This file holds the rules for objects and arrays, whose "content model"
// decides what a property or item added or removed means:
//   - open: anything may be added (no additionalProperties schema, no
//     patternProperties, unevaluatedProperties absent or true; for arrays no
//     additionalItems schema and unevaluatedItems absent or true);
//   - partially open: what is added must match a schema (a patternProperty
//     matching the name, additionalProperties, or unevaluatedProperties);
//   - closed: nothing may be added (additionalProperties false).

func (c *context) compareObject(o, u *node) {
	c.compareRequired(o, u)
	c.compareProperties(o, u)
	c.compareDependencies(o, u)
	c.enter("additionalProperties")
	switch {
	case o.noAdditional != u.noAdditional:
		if !u.noAdditional {
			c.add(additionalPropertiesAdded)
		} else {
			c.add(additionalPropertiesRemoved)
		}
	case o.additional == nil && u.additional != nil:
		c.add(additionalPropertiesNarrowed)
	case o.additional != nil && u.additional == nil:
		c.add(additionalPropertiesExtended)
	default:
		c.compare(o.additional, u.additional)
	}
	c.leave()
	c.compareUnevaluated("unevaluatedProperties", o.unevaluated, u.unevaluated,
		unevaluatedPropertiesAdded, unevaluatedPropertiesRemoved,
		unevaluatedPropertiesExtended, unevaluatedPropertiesNarrowed)
	c.bound("maxProperties", o.maxProperties, u.maxProperties, maxPropertiesAdded, maxPropertiesRemoved, maxPropertiesIncreased, maxPropertiesDecreased)
	c.bound("minProperties", o.minProperties, u.minProperties, minPropertiesAdded, minPropertiesRemoved, minPropertiesIncreased, minPropertiesDecreased)
}

func (n *node) property(name string) *node {
	for _, p := range n.properties {
		if p.name == name {
			return p.schema
		}
	}
	return nil
}

func (c *context) compareRequired(o, u *node) {
	c.enter("required")
	for _, p := range o.properties {
		us := u.property(p.name)
		if us == nil {
			continue
		}
		was, is := o.required[p.name], u.required[p.name]
		switch {
		case was && !is:
			c.addAt(p.name, requiredAttributeRemoved)
		case !was && is && us.def != nil:
			c.addAt(p.name, requiredAttributeWithDefaultAdded)
		case !was && is:
			c.addAt(p.name, requiredAttributeAdded)
		}
	}
	c.leave()
}

// propertyNames is every property of o, then those only u has.
func propertyNames(o, u *node) []string {
	var names []string
	seen := map[string]bool{}
	for _, n := range []*node{o, u} {
		for _, p := range n.properties {
			if !seen[p.name] {
				seen[p.name] = true
				names = append(names, p.name)
			}
		}
	}
	return names
}

// openObject: anything may be added to an object of n.
func openObject(n *node) bool {
	if n.noAdditional || n.additional != nil || len(n.patternProperties) > 0 {
		return false
	}
	return n.unevaluated == nil || n.unevaluated.isEmpty()
}

// partialObjectSchema is the schema an object of n holds property name to
// when n does not list it: a matching patternProperty's,
// additionalProperties', or unevaluatedProperties'; nil when there is none.
func partialObjectSchema(n *node, name string) *node {
	for _, pp := range n.patternProperties {
		if pp.re.MatchString(name) {
			return pp.schema
		}
	}
	if n.additional != nil {
		return n.additional
	}
	if !n.noAdditional && n.unevaluated != nil && n.unevaluated.kind != kFalse && !n.unevaluated.isEmpty() {
		return n.unevaluated
	}
	return nil
}

func (c *context) compareProperties(o, u *node) {
	c.enter("properties")
	defer c.leave()
	for _, name := range propertyNames(o, u) {
		c.enter(name)
		os, us := o.property(name), u.property(name)
		switch {
		case us == nil:
			// Removing is up to the reader's (update's) content model.
			if openObject(u) {
				c.add(propertyRemovedFromOpenContentModel)
			} else if partial := partialObjectSchema(u, name); partial != nil {
				sc := c.sub()
				sc.compare(os, partial)
				c.diffs = append(c.diffs, sc.diffs...)
				if sc.compatible() {
					c.add(propertyRemovedIsCoveredByPartiallyOpenContentModel)
				} else {
					c.add(propertyRemovedNotCoveredByPartiallyOpenContentModel)
				}
			} else if os.kind == kFalse {
				c.add(propertyWithFalseRemovedFromClosedContentModel)
			} else {
				c.add(propertyRemovedFromClosedContentModel)
			}
		case os == nil:
			// Adding is up to the writer's (original's) content model.
			if openObject(o) {
				switch {
				case us.isEmpty():
					c.add(propertyWithEmptySchemaAddedToOpenContentModel)
				case u.required[name] && us.def != nil:
					c.add(requiredPropertyWithDefaultAddedToOpenContentModel)
				case u.required[name]:
					c.add(requiredPropertyAddedToOpenContentModel)
				default:
					c.add(optionalPropertyAddedToOpenContentModel)
				}
			} else {
				if partial := partialObjectSchema(o, name); partial != nil {
					sc := c.sub()
					sc.compare(partial, us)
					c.diffs = append(c.diffs, sc.diffs...)
					if sc.compatible() {
						c.add(propertyAddedIsCoveredByPartiallyOpenContentModel)
					} else {
						c.add(propertyAddedNotCoveredByPartiallyOpenContentModel)
					}
				}
				switch {
				case u.required[name] && us.def != nil:
					c.add(requiredPropertyWithDefaultAddedToUnopenContentModel)
				case u.required[name]:
					c.add(requiredPropertyAddedToUnopenContentModel)
				default:
					c.add(optionalPropertyAddedToUnopenContentModel)
				}
			}
		default:
			c.compare(os, us)
		}
		c.leave()
	}
}

func (c *context) compareDependencies(o, u *node) {
	c.enter("dependencies")
	defer c.leave()
	for _, name := range dependencyNames(o, u, true) {
		c.enter(name)
		od, oOK := o.propertyDependencies[name]
		ud, uOK := u.propertyDependencies[name]
		switch {
		case !uOK:
			c.add(dependencyArrayRemoved)
		case !oOK:
			c.add(dependencyArrayAdded)
		case sameSet(od, ud):
		case containsAll(ud, od):
			c.add(dependencyArrayExtended)
		case containsAll(od, ud):
			c.add(dependencyArrayNarrowed)
		default:
			c.add(dependencyArrayChanged)
		}
		c.leave()
	}
	for _, name := range dependencyNames(o, u, false) {
		c.enter(name)
		os, us := o.schemaDependencies[name], u.schemaDependencies[name]
		switch {
		case us == nil:
			c.add(dependencySchemaRemoved)
		case os == nil:
			c.add(dependencySchemaAdded)
		default:
			c.compare(os, us)
		}
		c.leave()
	}
}

// dependencyNames lists the property (arrays) or schema dependencies of o
// and then u, each once.
func dependencyNames(o, u *node, arrays bool) []string {
	var names []string
	seen := map[string]bool{}
	for _, n := range []*node{o, u} {
		for _, name := range n.dependencyOrder {
			_, isArray := n.propertyDependencies[name]
			if isArray == arrays && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		}
	}
	return names
}

func sameSet(a, b []string) bool { return containsAll(a, b) && containsAll(b, a) }

// compareUnevaluated is the rule shared by unevaluatedProperties and
// unevaluatedItems.
func (c *context) compareUnevaluated(attr string, o, u *node, added, removed, extended, narrowed diffType) {
	if o == nil && u == nil {
		return
	}
	c.enter(attr)
	defer c.leave()
	switch {
	case o == nil && u.kind == kFalse:
		c.add(removed)
	case o == nil:
		c.add(narrowed)
	case u == nil && o.kind == kFalse:
		c.add(added)
	case u == nil:
		c.add(extended)
	case o.kind == kFalse && u.kind != kFalse:
		c.add(added)
	case o.kind != kFalse && u.kind == kFalse:
		c.add(removed)
	case o.isEmpty() && !u.isEmpty():
		c.add(narrowed)
	case !o.isEmpty() && u.isEmpty():
		c.add(extended)
	default:
		c.compare(o, u)
	}
}

func (c *context) compareArray(o, u *node) {
	c.enter("items")
	c.compare(o.allItems, u.allItems)
	c.leave()
	c.compareTuple(o, u)
	c.enter("additionalItems")
	switch {
	case o.noAdditional != u.noAdditional:
		if !o.noAdditional {
			c.add(additionalItemsRemoved)
		} else {
			c.add(additionalItemsAdded)
		}
	case o.additional == nil && u.additional != nil:
		c.add(additionalItemsNarrowed)
	case o.additional != nil && u.additional == nil:
		c.add(additionalItemsExtended)
	default:
		c.compare(o.additional, u.additional)
	}
	c.leave()
	c.compareUnevaluated("unevaluatedItems", o.unevaluated, u.unevaluated,
		unevaluatedItemsAdded, unevaluatedItemsRemoved,
		unevaluatedItemsExtended, unevaluatedItemsNarrowed)
	c.bound("maxItems", o.maxItems, u.maxItems, maxItemsAdded, maxItemsRemoved, maxItemsIncreased, maxItemsDecreased)
	c.bound("minItems", o.minItems, u.minItems, minItemsAdded, minItemsRemoved, minItemsIncreased, minItemsDecreased)
	if o.unique != u.unique {
		if o.unique {
			c.addAt("uniqueItems", uniqueItemsRemoved)
		} else {
			c.addAt("uniqueItems", uniqueItemsAdded)
		}
	}
	c.bound("maxContains", o.maxContains, u.maxContains, maxContainsAdded, maxContainsRemoved, maxContainsIncreased, maxContainsDecreased)
	c.bound("minContains", o.minContains, u.minContains, minContainsAdded, minContainsRemoved, minContainsIncreased, minContainsDecreased)
}

// openArray: any item may follow an array of n's tuple.
func openArray(n *node) bool {
	if n.noAdditional || n.additional != nil {
		return false
	}
	return n.unevaluated == nil || n.unevaluated.isEmpty()
}

// partialArraySchema is the schema items past n's tuple must match, or nil.
func partialArraySchema(n *node) *node {
	if n.additional != nil {
		return n.additional
	}
	if !n.noAdditional && n.unevaluated != nil && n.unevaluated.kind != kFalse && !n.unevaluated.isEmpty() {
		return n.unevaluated
	}
	return nil
}

func (c *context) compareTuple(o, u *node) {
	shared := min(len(o.tuple), len(u.tuple))
	for i := 0; i < shared; i++ {
		c.enter("items/" + strconv.Itoa(i))
		c.compare(o.tuple[i], u.tuple[i])
		c.leave()
	}
	for i := shared; i < len(o.tuple); i++ {
		c.enter("items/" + strconv.Itoa(i))
		os := o.tuple[i]
		if openArray(u) {
			c.add(itemRemovedFromOpenContentModel)
		} else if partial := partialArraySchema(u); partial != nil {
			sc := c.sub()
			sc.compare(os, partial)
			c.diffs = append(c.diffs, sc.diffs...)
			if sc.compatible() {
				c.add(itemRemovedIsCoveredByPartiallyOpenContentModel)
			} else {
				c.add(itemRemovedNotCoveredByPartiallyOpenContentModel)
			}
		} else if os.kind == kFalse {
			c.add(itemWithFalseRemovedFromClosedContentModel)
		} else {
			c.add(itemRemovedFromClosedContentModel)
		}
		c.leave()
	}
	for i := shared; i < len(u.tuple); i++ {
		c.enter("items/" + strconv.Itoa(i))
		us := u.tuple[i]
		if openArray(o) {
			if us.isEmpty() {
				c.add(itemWithEmptySchemaAddedToOpenContentModel)
			} else {
				c.add(itemAddedToOpenContentModel)
			}
		} else if partial := partialArraySchema(o); partial != nil {
			sc := c.sub()
			sc.compare(partial, us)
			c.diffs = append(c.diffs, sc.diffs...)
			if sc.compatible() {
				c.add(itemAddedIsCoveredByPartiallyOpenContentModel)
			} else {
				c.add(itemAddedNotCoveredByPartiallyOpenContentModel)
			}
		} else {
			c.add(itemAddedToClosedContentModel)
		}
		c.leave()
	}
}
