package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

// module is the import path prefix of floe's packages.
const module = "floe"

// goPackage is what go list tells of one package.
type goPackage struct {
	ImportPath   string
	Name         string
	Doc          string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// rel is a package path without the module prefix, as the docs write it.
func rel(path string) string { return strings.TrimPrefix(path, module+"/") }

// floeImports is a package's floe imports, sorted. A package of tests only
// (integration, deploy) reports its tests' imports instead.
func (p goPackage) floeImports() (imports []string, testsOnly bool) {
	from := p.Imports
	if len(p.GoFiles) == 0 {
		from = append(slices.Clone(p.TestImports), p.XTestImports...)
		testsOnly = true
	}
	for _, imp := range from {
		if strings.HasPrefix(imp, module+"/") && imp != p.ImportPath && !slices.Contains(imports, rel(imp)) {
			imports = append(imports, rel(imp))
		}
	}
	slices.Sort(imports)
	return imports, testsOnly
}

// importsCell writes one package's imports column.
func (p goPackage) importsCell() string {
	imports, testsOnly := p.floeImports()
	if len(imports) == 0 {
		return "—"
	}
	quoted := make([]string, len(imports))
	for i, imp := range imports {
		quoted[i] = "`" + imp + "`"
	}
	list := strings.Join(quoted, ", ")
	if testsOnly {
		return "— (tests import " + list + ")"
	}
	return list
}

// synopsis is the first sentence of the package comment, for a new
// package's "owns" column.
func (p goPackage) synopsis() string {
	if s := strings.TrimSuffix(strings.TrimSpace(p.Doc), "."); s != "" {
		return s
	}
	return "(no package comment)"
}

// listPackages runs go list over the module; -e lists a package that does
// not build too (its imports are known once it parses), so the generator
// works while another package of the tree is half-edited.
func listPackages(root string) ([]goPackage, error) {
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Name,Doc,GoFiles,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// packageName matches one package of the package column.
var packageName = regexp.MustCompile("`([^`]+)`")

// packageRow is one row of the package table: packages sharing one "owns".
type packageRow struct {
	pkgs []string
	owns string
}

// packageTable writes the table of floe's packages and their floe imports.
// The rows, their order, their grouping and their "owns" prose are kept; the
// imports column is rewritten from go list. A package the table does not
// name gets a row of its own, after the last row of its top directory, with
// its package comment's first sentence as "owns"; a package that is gone
// leaves its row.
func packageTable(root string, old []string) ([]string, error) {
	pkgs, err := listPackages(root)
	if err != nil {
		return nil, err
	}
	return packageTableFrom(pkgs, old)
}

func packageTableFrom(pkgs []goPackage, old []string) ([]string, error) {
	byPath := make(map[string]goPackage, len(pkgs))
	for _, p := range pkgs {
		byPath[rel(p.ImportPath)] = p
	}
	named := make(map[string]bool)
	var rows []packageRow
	for _, cells := range tableRows(old, 3) {
		var r packageRow
		for _, m := range packageName.FindAllStringSubmatch(cells[0], -1) {
			if named[m[1]] {
				return nil, fmt.Errorf("package table: %s in two rows", m[1])
			}
			named[m[1]] = true
			if _, ok := byPath[m[1]]; ok {
				r.pkgs = append(r.pkgs, m[1])
			}
		}
		if len(r.pkgs) > 0 {
			r.owns = cells[2]
			rows = append(rows, r)
		}
	}
	for _, p := range pkgs {
		path := rel(p.ImportPath)
		if named[path] {
			continue
		}
		top, _, _ := strings.Cut(path, "/")
		at := len(rows)
		for i, r := range rows {
			if slices.ContainsFunc(r.pkgs, func(q string) bool { t, _, _ := strings.Cut(q, "/"); return t == top }) {
				at = i + 1
			}
		}
		rows = slices.Insert(rows, at, packageRow{pkgs: []string{path}, owns: p.synopsis()})
	}

	lines := []string{"| package | imports (floe only) | owns |", "|---|---|---|"}
	for _, r := range rows {
		names := make([]string, len(r.pkgs))
		cells := make([]string, len(r.pkgs))
		for i, path := range r.pkgs {
			names[i] = "`" + path + "`"
			cells[i] = byPath[path].importsCell()
		}
		imports := cells[0]
		if slices.ContainsFunc(cells, func(c string) bool { return c != cells[0] }) {
			for i := range cells {
				cells[i] = names[i] + ": " + cells[i]
			}
			imports = strings.Join(cells, "; ")
		}
		lines = append(lines, tableLine(strings.Join(names, ", "), imports, r.owns))
	}
	return lines, nil
}
