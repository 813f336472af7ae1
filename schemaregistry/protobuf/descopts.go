package protobuf

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
)

// A serialized schema has no text: its options were interpreted by whoever
// compiled it, and are printed back from the options messages themselves.

// optionsMsg is any of descriptor.proto's *Options messages.
type optionsMsg interface {
	proto.Message
	GetUninterpretedOption() []*descriptorpb.UninterpretedOption
}

// optionsOf prints an element's options: as written when there is a text,
// else from the options message.
func (p *printer) optionsOf(o optionsMsg) []string {
	if uos := o.GetUninterpretedOption(); p.res != nil || len(uos) > 0 {
		return p.options(uos)
	}
	return p.descOptions(o)
}

// descOptions prints the fields set in an options message, custom options
// by their full names in parentheses, in field-number order (by name when
// normalizing).
func (p *printer) descOptions(o optionsMsg) []string {
	if !o.ProtoReflect().IsValid() {
		return nil
	}
	// Custom options arrive as unknown fields: read them again with the
	// schema's own files, which define them.
	raw, err := proto.Marshal(o)
	if err != nil || len(raw) == 0 {
		return nil
	}
	m := o.ProtoReflect().Type().New().Interface()
	if err := (proto.UnmarshalOptions{Resolver: p.resolver}).Unmarshal(raw, m); err != nil {
		return nil
	}
	type opt struct {
		name string
		num  protoreflect.FieldNumber
		val  any
	}
	var opts []opt
	m.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Number() == 999 && !fd.IsExtension() { // uninterpreted_option
			return true
		}
		name := string(fd.Name())
		if fd.IsExtension() {
			name = "(" + string(fd.FullName()) + ")"
		}
		opts = append(opts, opt{name, fd.Number(), fieldValue(fd, v)})
		return true
	})
	slices.SortFunc(opts, func(a, b opt) int {
		if p.normalize {
			return strings.Compare(strings.Trim(a.name, "()"), strings.Trim(b.name, "()"))
		}
		return cmp.Compare(a.num, b.num)
	})
	out := make([]string, 0, len(opts))
	for _, o := range opts {
		if l, ok := o.val.(optList); ok {
			// A repeated option is set once per value.
			for _, v := range l {
				out = append(out, o.name+" = "+p.format(v))
			}
			continue
		}
		out = append(out, o.name+" = "+p.format(o.val))
	}
	return out
}

// fieldValue turns a value of an options message into the printer's tree.
func fieldValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	if fd.IsList() {
		l := optList{}
		for i := 0; i < v.List().Len(); i++ {
			l = append(l, singleValue(fd, v.List().Get(i)))
		}
		return l
	}
	if fd.IsMap() {
		l := optList{}
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			l = append(l, optMap{{"key", singleValue(fd.MapKey(), k.Value())}, {"value", singleValue(fd.MapValue(), mv)}})
			return true
		})
		return l
	}
	return singleValue(fd, v)
}

func singleValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		var m optMap
		v.Message().Range(func(f protoreflect.FieldDescriptor, fv protoreflect.Value) bool {
			key := string(f.Name())
			if f.IsExtension() {
				key = "[" + string(f.FullName()) + "]"
			}
			m = append(m, optEntry{key, fieldValue(f, fv)})
			return true
		})
		return m
	case protoreflect.StringKind:
		return "\"" + escape(v.String()) + "\""
	case protoreflect.BytesKind:
		return "\"" + escape(string(v.Bytes())) + "\""
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return strconv.Itoa(int(v.Enum()))
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return v.String()
}

// fieldSpecials is a serialized field's default and json_name, printed as
// the options a text would have written: json_name only where it is not
// the one protobuf derives from the field's name.
func (p *printer) fieldSpecials(f *descriptorpb.FieldDescriptorProto) []string {
	if f == nil {
		return nil
	}
	var out []string
	if f.DefaultValue != nil {
		v := f.GetDefaultValue()
		switch f.GetType() {
		case descriptorpb.FieldDescriptorProto_TYPE_STRING, descriptorpb.FieldDescriptorProto_TYPE_BYTES:
			v = "\"" + escape(v) + "\""
		}
		out = append(out, "default = "+v)
	}
	if f.JsonName != nil && f.GetJsonName() != jsonName(f.GetName()) {
		out = append(out, "json_name = \""+escape(f.GetJsonName())+"\"")
	}
	return out
}

// jsonName is protobuf's default JSON name: lowerCamelCase of the field's
// name.
func jsonName(name string) string {
	var b strings.Builder
	upper := false
	for _, r := range name {
		if r == '_' {
			upper = true
			continue
		}
		if upper && 'a' <= r && r <= 'z' {
			r -= 'a' - 'A'
		}
		upper = false
		b.WriteRune(r)
	}
	return b.String()
}
