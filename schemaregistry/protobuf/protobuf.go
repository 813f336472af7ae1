// Package protobuf is the schema registry's Protobuf format: it compiles a
// schema's .proto text (or a base64 FileDescriptorProto, Confluent's
// format=serialized) with bufbuild/protocompile, its imports resolved from the
// schema's references and from the files Confluent serves built in (the Google
// well-known types, the common google/type files, confluent/meta.proto and
// confluent/type/decimal.proto); prints it back in Confluent's layout for
// look-ups (Canonical) and normalize=true (Normalized); decodes payloads
// against a message named by Confluent's message-index path; and applies
// Confluent's Protobuf compatibility rules (compat.go).
//
// It never reads the file system or the network: every import is either a
// reference handed in by the registry or a file compiled into the binary.
// Files: protobuf.go (Parse, Validate, Formatted), builtin.go (the built-in
// files), print.go, literal.go and ranges.go (Canonical and Normalized, in
// Confluent's layout), compat.go (compatibility).
package protobuf

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"github.com/bufbuild/protocompile/parser"
	"github.com/bufbuild/protocompile/reporter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"floe/schemaregistry/format"
)

// New returns the Protobuf format.
func New() format.Format { return protobufFormat{} }

var _ format.Format = protobufFormat{}

type protobufFormat struct{}

func (protobufFormat) Type() string { return format.Protobuf }

// maxDepth bounds how deep references may nest: a chain longer than this is
// a cycle or an abuse, and is refused rather than followed.
const maxDepth = 64

// Schema is a compiled Protobuf schema.
type Schema struct {
	// file is the linked descriptor of the schema's own file.
	file linker.File
	// origins names where each imported file came from, by import path: a
	// reference's subject and version, or builtin. Compatibility compares
	// two same-named types from different origins field by field.
	origins map[string]origin
	// declaredProto2: the text says syntax = "proto2" (the descriptor
	// cannot tell that from no syntax line).
	declaredProto2 bool
	canonical      string
	normalized     string
	// ignoreExtensions is format=ignore_extensions, kept only where it is
	// not the canonical form.
	ignoreExtensions string
}

var _ format.Schema = (*Schema)(nil)

type origin struct {
	subject string
	version int
	builtin bool
}

// invalidPrefix opens Confluent's 42201 message for a Protobuf schema that
// does not compile (ProtobufSchemaProvider).
const invalidPrefix = "Invalid schema of type PROTOBUF, details: "

// Parse compiles schema with its references. A schema is user input: a
// panic anywhere in compiling or printing it is an invalid schema, never a
// crash.
func (protobufFormat) Parse(schema string, refs []format.Reference) (_ format.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%sinternal error: %v", invalidPrefix, p)
		}
	}()
	s, err := parse(schema, refs)
	if err != nil {
		return nil, fmt.Errorf("%s%w", invalidPrefix, err)
	}
	return s, nil
}

func parse(schema string, refs []format.Reference) (*Schema, error) {
	sources := map[string]string{}
	origins := map[string]origin{}
	if err := collectRefs(refs, sources, origins, 0); err != nil {
		return nil, err
	}
	root := "schema.proto"
	for i := 0; ; i++ {
		if _, ok := sources[root]; !ok {
			break
		}
		root = fmt.Sprintf("schema%d.proto", i)
	}

	rootRes, rootProto, err := parseRoot(root, schema)
	if err != nil {
		return nil, err
	}
	// The linker interprets options and resolves names in place: the
	// printer reads a second parse, the file as written.
	var written source
	if rootRes == nil {
		written.proto = proto.Clone(rootProto).(*descriptorpb.FileDescriptorProto)
	} else {
		res, _, err := parseRoot(root, schema)
		if err != nil {
			return nil, err
		}
		written = source{proto: res.FileDescriptorProto(), res: res}
	}

	resolver := protocompile.WithStandardImports(protocompile.ResolverFunc(func(path string) (protocompile.SearchResult, error) {
		if path == root {
			if rootRes == nil {
				return protocompile.SearchResult{Proto: rootProto}, nil
			}
			return protocompile.SearchResult{ParseResult: rootRes}, nil
		}
		if text, ok := sources[path]; ok {
			return protocompile.SearchResult{Source: strings.NewReader(text)}, nil
		}
		if text, ok := builtinFiles[path]; ok {
			return protocompile.SearchResult{Source: strings.NewReader(text)}, nil
		}
		return protocompile.SearchResult{}, fmt.Errorf("file %q not found: no reference of that name", path)
	}))
	c := protocompile.Compiler{
		Resolver:       resolver,
		MaxParallelism: 1,
		Reporter:       reporter.NewReporter(nil, nil),
	}
	files, err := compile(&c, root)
	if err != nil {
		return nil, err
	}
	s := &Schema{file: files[0], origins: origins}
	if rootRes != nil {
		ast := rootRes.AST()
		s.declaredProto2 = ast.Syntax != nil && ast.Syntax.Syntax.AsString() == "proto2"
	} else {
		s.declaredProto2 = rootProto.GetSyntax() == "proto2"
	}
	imports := s.file.Imports()
	for i := 0; i < imports.Len(); i++ {
		markBuiltins(imports.Get(i).FileDescriptor, s.origins)
	}
	// Both forms are printed now, while the parse is at hand, rather than
	// keeping its syntax tree for a Normalized that may never be asked.
	s.canonical = printFile(s, written, false, false)
	s.normalized = printFile(s, written, true, false)
	if ie := printFile(s, written, false, true); ie != s.canonical {
		s.ignoreExtensions = ie
	}
	return s, nil
}

// compile runs the compiler, turning a panic inside it into an error: a
// schema is user input and must never take the process down.
func compile(c *protocompile.Compiler, root string) (files linker.Files, err error) {
	defer func() {
		if p := recover(); p != nil {
			files, err = nil, fmt.Errorf("compiler failure: %v", p)
		}
	}()
	return c.Compile(context.Background(), root)
}

// parseRoot parses the schema's own text, or failing that decodes it as a
// base64 FileDescriptorProto (format=serialized): one of the two results
// is set.
func parseRoot(name, schema string) (parser.Result, *descriptorpb.FileDescriptorProto, error) {
	if err := checkNesting(name, schema); err != nil {
		return nil, nil, err
	}
	h := reporter.NewHandler(nil)
	ast, perr := parser.Parse(name, strings.NewReader(schema), h)
	if perr == nil {
		res, err := parser.ResultFromAST(ast, true, h)
		if err != nil {
			return nil, nil, err
		}
		return res, nil, nil
	}
	if fd, ok := decodeSerialized(schema); ok {
		fd.Name = proto.String(name)
		return nil, fd, nil
	}
	return nil, nil, perr
}

// maxNesting bounds how deep braces and brackets nest in a schema's text:
// the compiler and the printer recurse once a level, and a schema of a
// million nested messages must cost an error, not the process's stack.
const maxNesting = 256

// checkNesting refuses text nested deeper than maxNesting, skipping string
// literals and comments.
func checkNesting(name, text string) error {
	depth := 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '{', '[', '(', '<':
			if depth++; depth > maxNesting {
				return fmt.Errorf("%s: declarations nest deeper than %d levels", name, maxNesting)
			}
		case '}', ']', ')', '>':
			depth--
		case '"', '\'':
			for i++; i < len(text) && text[i] != c && text[i] != '\n'; i++ {
				if text[i] == '\\' {
					i++
				}
			}
		case '/':
			if strings.HasPrefix(text[i:], "//") {
				for i < len(text) && text[i] != '\n' {
					i++
				}
			} else if strings.HasPrefix(text[i:], "/*") {
				end := strings.Index(text[i+2:], "*/")
				if end < 0 {
					return nil
				}
				i += end + 3
			}
		}
	}
	return nil
}

func decodeSerialized(schema string) (*descriptorpb.FileDescriptorProto, bool) {
	text := strings.TrimSpace(schema)
	if text == "" || strings.ContainsAny(text, " \n\t;{") {
		return nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, false
	}
	fd := &descriptorpb.FileDescriptorProto{}
	if err := proto.Unmarshal(raw, fd); err != nil {
		return nil, false
	}
	if len(fd.MessageType) == 0 && len(fd.EnumType) == 0 && len(fd.Service) == 0 && fd.GetPackage() == "" && fd.GetSyntax() == "" {
		return nil, false
	}
	return fd, true
}

// collectRefs flattens the reference tree into import path -> text. The
// first text given for a path wins, as an import path names one file.
func collectRefs(refs []format.Reference, sources map[string]string, origins map[string]origin, depth int) error {
	if depth > maxDepth {
		return errors.New("references nest too deeply")
	}
	for _, r := range refs {
		if _, ok := sources[r.Name]; ok {
			continue
		}
		if _, ok := builtinFiles[r.Name]; ok && strings.TrimSpace(r.Schema) == "" {
			// A reference to a built-in file by name only: the built-in
			// text serves.
			continue
		}
		sources[r.Name] = r.Schema
		origins[r.Name] = origin{subject: r.Subject, version: r.Version}
		if err := collectRefs(r.References, sources, origins, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// markBuiltins records every file reachable from f that no reference gave
// as built in.
func markBuiltins(f protoreflect.FileDescriptor, origins map[string]origin) {
	if _, ok := origins[f.Path()]; ok {
		return
	}
	origins[f.Path()] = origin{builtin: true}
	imports := f.Imports()
	for i := 0; i < imports.Len(); i++ {
		markBuiltins(imports.Get(i).FileDescriptor, origins)
	}
}

// Canonical is the schema printed back from its parsed form in Confluent's
// layout (ProtobufSchema.canonicalString): white space and comments do not
// count.
func (s *Schema) Canonical() string { return s.canonical }

// Normalized is Confluent's normalize: type names fully qualified, fields,
// options, imports and enum values sorted.
func (s *Schema) Normalized() string {
	return s.normalized
}

// Formatted is the schema as GET /schemas/ids/{id}?format= asks for it,
// as Confluent's formattedString: "" or "default" the canonical form,
// "ignore_extensions" without custom options (Confluent's own kept),
// extension ranges or extends, and "serialized" the base64 of the file's
// FileDescriptorProto. An unknown format gets the canonical form, as
// Confluent answers it.
func (s *Schema) Formatted(format string) string {
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "ignore_extensions":
		if s.ignoreExtensions != "" {
			return s.ignoreExtensions
		}
	case "serialized":
		raw, err := proto.MarshalOptions{Deterministic: true}.Marshal(protodesc.ToFileDescriptorProto(s.file))
		if err == nil {
			return base64.StdEncoding.EncodeToString(raw)
		}
	}
	return s.canonical
}

// Descriptor is the compiled file, for callers that decode records
// themselves (typed tables).
func (s *Schema) Descriptor() protoreflect.FileDescriptor { return s.file }

// Message returns the message that a Confluent message-index path names:
// nil or [0] the file's first message, [1, 0] the first message nested in
// the second. Only messages count, in declaration order; map entries,
// proto2 groups and enums do not, as in Confluent's Java serializers. (A
// serializer counting with the Go runtime's Descriptor.Index would count
// map entries too, and disagree for a message that declares a map field
// before a nested message.)
func (s *Schema) Message(index []int) (protoreflect.MessageDescriptor, error) {
	if len(index) == 0 {
		index = []int{0}
	}
	var md protoreflect.MessageDescriptor
	msgs := s.file.Messages()
	for _, i := range index {
		md = nil
		n := 0
		for j := 0; j < msgs.Len(); j++ {
			m := msgs.Get(j)
			if m.IsMapEntry() || isGroupBody(m) {
				continue
			}
			if n == i {
				md = m
				break
			}
			n++
		}
		if md == nil {
			return nil, fmt.Errorf("invalid message indexes %v: %w", index, format.ErrUnknownIndex)
		}
		msgs = md.Messages()
	}
	return md, nil
}

// Validate decodes payload as the message that index names. It runs on
// the produce path: a panic while decoding is a refused record, never a
// crash of the agent.
func (s *Schema) Validate(index []int, payload []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("payload does not decode: %v", p)
		}
	}()
	md, err := s.Message(index)
	if err != nil {
		return err
	}
	msg := dynamicpb.NewMessage(md)
	if err := (proto.UnmarshalOptions{RecursionLimit: 100}).Unmarshal(payload, msg); err != nil {
		return fmt.Errorf("payload is not a %s: %w", md.FullName(), err)
	}
	return nil
}
