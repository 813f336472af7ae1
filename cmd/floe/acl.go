package main

// floe acl: Kafka ACLs through a broker's admin API (CreateAcls,
// DescribeAcls, DeleteAcls), as kafka-acls.sh manages them, and the
// agent flags that turn authorization on.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"floe/agent"
)

func init() {
	commands["acl"] = runACL
}

const aclUsage = `usage: floe acl add|remove|list [flags]

  add     create ACLs: every principal x host x resource x operation given
  remove  delete the ACLs the flags select (unset: any; a resource or a
          principal is required)
  list    list the ACLs the flags select (unset: any)

Resources: --topic, --group, --transactional-id (comma-separated names),
--cluster; --resource-pattern-type literal (add's default), prefixed, and
for list and remove also match and any (their default).

Examples:
  floe acl add --allow-principal User:alice --operation read,describe --topic orders
  floe acl add --allow-principal User:alice --operation write --topic orders- --resource-pattern-type prefixed
  floe acl add --deny-principal User:mallory --deny-host 10.0.0.9 --operation all --topic '*'
  floe acl list --topic orders --resource-pattern-type match
  floe acl remove --allow-principal User:alice --operation read --topic orders
`

// registerAuthzFlags registers the authorization flags of floe dev and
// floe agent.
func registerAuthzFlags(fs *flag.FlagSet, c *agent.AuthzConfig) {
	fs.BoolVar(&c.Enabled, "authorizer", c.Enabled, "check every request against the ACLs in the metadata store, as Kafka's StandardAuthorizer does (off: everything is allowed and the ACL APIs answer SECURITY_DISABLED)")
	fs.Func("super-users", "principals allowed everything, `User:a;User:b` (Kafka's super.users)", func(s string) error {
		c.SuperUsers = nil
		for _, p := range strings.Split(s, ";") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
				return fmt.Errorf("super user %q: want Type:name, e.g. User:admin", p)
			}
			c.SuperUsers = append(c.SuperUsers, p)
		}
		return nil
	})
	fs.BoolVar(&c.AllowEveryoneIfNoACL, "allow-everyone-if-no-acl-found", c.AllowEveryoneIfNoACL, "allow actions on resources no ACL names (allow.everyone.if.no.acl.found)")
}

// aclFlags are floe acl's flags, and what check parses them into.
type aclFlags struct {
	sub         string // add, remove or list
	out, errOut io.Writer

	conn    adminClientFlags
	timeout time.Duration

	allow, deny, allowHosts, denyHosts, principal string
	operations, topics, groups, txnIDs, pattern   string
	cluster                                       bool

	allowList, denyList, allowHostList, denyHostList []string
	topicList, groupList, txList                     []string
	resourcesGiven                                   bool
	parsedOps                                        []kmsg.ACLOperation
	patternType                                      kmsg.ACLResourcePatternType
}

func runACL(args []string) error { return runACLTo(args, os.Stdout, os.Stderr) }

func runACLTo(args []string, out, errOut io.Writer) error {
	if len(args) == 0 || (args[0] != "add" && args[0] != "remove" && args[0] != "list") {
		fmt.Fprint(errOut, aclUsage)
		return errors.New("floe acl: want add, remove or list")
	}
	f := &aclFlags{sub: args[0], out: out, errOut: errOut}
	fs := flag.NewFlagSet("floe acl "+f.sub, flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() { fmt.Fprint(errOut, aclUsage, "\nFlags:\n"); fs.PrintDefaults() }
	f.conn.register(fs)
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "bound on the whole command")
	fs.StringVar(&f.allow, "allow-principal", "", "`principals` the ACLs allow (User:a,User:b)")
	fs.StringVar(&f.deny, "deny-principal", "", "`principals` the ACLs deny (User:a,User:b)")
	fs.StringVar(&f.allowHosts, "allow-host", "", "hosts of the allow ACLs (add: default *; remove: default any)")
	fs.StringVar(&f.denyHosts, "deny-host", "", "hosts of the deny ACLs (add: default *; remove: default any)")
	fs.StringVar(&f.principal, "principal", "", "list: only ACLs of this principal")
	fs.StringVar(&f.operations, "operation", "", "operations, comma-separated: all, read, write, create, delete, alter, describe, cluster_action, describe_configs, alter_configs, idempotent_write (add: required; list, remove: default any)")
	fs.StringVar(&f.topics, "topic", "", "topic `names`, comma-separated")
	fs.StringVar(&f.groups, "group", "", "consumer group `ids`, comma-separated")
	fs.StringVar(&f.txnIDs, "transactional-id", "", "transactional `ids`, comma-separated")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster resource (kafka-cluster)")
	fs.StringVar(&f.pattern, "resource-pattern-type", "", "literal or prefixed; list and remove also match and any (default: literal for add, any for list and remove)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := f.check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	cl, err := f.conn.kgoClient()
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	switch f.sub {
	case "add":
		return f.add(ctx, adm)
	case "remove":
		return f.remove(ctx, adm)
	default:
		return f.list(ctx, adm)
	}
}

// check parses and cross-checks the flags.
func (f *aclFlags) check() error {
	f.allowList, f.denyList = splitComma(f.allow), splitComma(f.deny)
	f.allowHostList, f.denyHostList = splitComma(f.allowHosts), splitComma(f.denyHosts)
	f.topicList, f.groupList, f.txList = splitComma(f.topics), splitComma(f.groups), splitComma(f.txnIDs)
	f.resourcesGiven = len(f.topicList)+len(f.groupList)+len(f.txList) > 0 || f.cluster
	for _, op := range splitComma(f.operations) {
		o, err := kmsg.ParseACLOperation(op)
		if err != nil {
			return fmt.Errorf("--operation %q: unknown operation", op)
		}
		f.parsedOps = append(f.parsedOps, o)
	}
	f.patternType = kmsg.ACLResourcePatternTypeAny
	if f.sub == "add" {
		f.patternType = kmsg.ACLResourcePatternTypeLiteral
	}
	if f.pattern != "" {
		p, err := kmsg.ParseACLResourcePatternType(f.pattern)
		if err != nil || p == kmsg.ACLResourcePatternTypeUnknown {
			return fmt.Errorf("--resource-pattern-type %q: want literal, prefixed, match or any", f.pattern)
		}
		f.patternType = p
	}
	principals := append(append([]string{}, f.allowList...), f.denyList...)
	for _, p := range append(principals, splitComma(f.principal)...) {
		if typ, name, ok := strings.Cut(p, ":"); !ok || typ == "" || name == "" {
			return fmt.Errorf("principal %q: want Type:name, e.g. User:alice", p)
		}
	}
	switch f.sub {
	case "add":
		switch {
		case len(f.allowList)+len(f.denyList) == 0:
			return errors.New("add: give --allow-principal or --deny-principal")
		case !f.resourcesGiven:
			return errors.New("add: give a resource: --topic, --group, --transactional-id or --cluster")
		case len(f.parsedOps) == 0:
			return errors.New("add: give --operation")
		case f.patternType != kmsg.ACLResourcePatternTypeLiteral && f.patternType != kmsg.ACLResourcePatternTypePrefixed:
			return errors.New("add: --resource-pattern-type must be literal or prefixed")
		case f.principal != "":
			return errors.New("add: --principal is for list; use --allow-principal or --deny-principal")
		}
	case "remove":
		if f.principal != "" {
			return errors.New("remove: --principal is for list; use --allow-principal or --deny-principal")
		}
		if !f.resourcesGiven && len(f.allowList)+len(f.denyList) == 0 {
			return errors.New("remove: name a resource or a principal (--topic, --group, --transactional-id, --cluster, --allow-principal, --deny-principal)")
		}
	case "list":
		if f.allow != "" || f.deny != "" || f.allowHosts != "" || f.denyHosts != "" {
			return errors.New("list: select principals with --principal")
		}
	}
	if len(f.allowHostList) > 0 && len(f.allowList) == 0 || len(f.denyHostList) > 0 && len(f.denyList) == 0 {
		return errors.New("--allow-host needs --allow-principal, --deny-host --deny-principal")
	}
	return nil
}

// resources puts the named resources into b; with none named, a filter
// matches every resource.
func (f *aclFlags) resources(b *kadm.ACLBuilder) {
	if !f.resourcesGiven {
		b.AnyResource()
		return
	}
	b.MaybeTopics(f.topicList...).MaybeGroups(f.groupList...).MaybeTransactionalIDs(f.txList...).MaybeClusters(f.cluster)
}

func (f *aclFlags) add(ctx context.Context, adm *kadm.Client) error {
	b := kadm.NewACLs().ResourcePatternType(f.patternType).Operations(f.parsedOps...)
	f.resources(b)
	if len(f.allowList) > 0 {
		b.Allow(f.allowList...).AllowHosts(f.allowHostList...)
	}
	if len(f.denyList) > 0 {
		b.Deny(f.denyList...).DenyHosts(f.denyHostList...)
	}
	rs, err := adm.CreateACLs(ctx, b)
	if err != nil {
		return fmt.Errorf("create acls: %w", err)
	}
	failed := 0
	w := tabwriter.NewWriter(f.out, 0, 4, 2, ' ', 0)
	for _, r := range rs {
		status := "created"
		if r.Err != nil {
			status, failed = fmt.Sprintf("FAILED: %v %s", r.Err, r.ErrMessage), failed+1
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Type, r.Name, r.Pattern, r.Principal, r.Host, r.Operation, r.Permission, status)
	}
	w.Flush()
	if failed > 0 {
		return fmt.Errorf("%d of %d ACLs not created", failed, len(rs))
	}
	return nil
}

// filter builds the builder of a list or remove.
func (f *aclFlags) filter() *kadm.ACLBuilder {
	b := kadm.NewACLs().ResourcePatternType(f.patternType).Operations(f.parsedOps...)
	f.resources(b)
	switch {
	case f.sub == "list" && f.principal != "":
		ps := splitComma(f.principal)
		b.Allow(ps...).AllowHosts().Deny(ps...).DenyHosts()
	case len(f.allowList)+len(f.denyList) == 0:
		b.Allow().AllowHosts().Deny().DenyHosts()
	default:
		if len(f.allowList) > 0 {
			b.Allow(f.allowList...).AllowHosts(f.allowHostList...)
		}
		if len(f.denyList) > 0 {
			b.Deny(f.denyList...).DenyHosts(f.denyHostList...)
		}
	}
	return b
}

func (f *aclFlags) list(ctx context.Context, adm *kadm.Client) error {
	rs, err := adm.DescribeACLs(ctx, f.filter())
	if err != nil {
		return fmt.Errorf("describe acls: %w", err)
	}
	w := tabwriter.NewWriter(f.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RESOURCE\tNAME\tPATTERN\tPRINCIPAL\tHOST\tOPERATION\tPERMISSION")
	seen := map[kadm.DescribedACL]bool{} // filters may overlap
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("describe acls: %v %s", r.Err, r.ErrMessage)
		}
		for _, d := range r.Described {
			if seen[d] {
				continue
			}
			seen[d] = true
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.Type, d.Name, d.Pattern, d.Principal, d.Host, d.Operation, d.Permission)
		}
	}
	return w.Flush()
}

func (f *aclFlags) remove(ctx context.Context, adm *kadm.Client) error {
	rs, err := adm.DeleteACLs(ctx, f.filter())
	if err != nil {
		return fmt.Errorf("delete acls: %w", err)
	}
	w := tabwriter.NewWriter(f.out, 0, 4, 2, ' ', 0)
	n := 0
	for _, r := range rs {
		if r.Err != nil {
			w.Flush()
			return fmt.Errorf("delete acls: %v %s", r.Err, r.ErrMessage)
		}
		for _, d := range r.Deleted {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\tdeleted\n", d.Type, d.Name, d.Pattern, d.Principal, d.Host, d.Operation, d.Permission)
			n++
		}
	}
	w.Flush()
	if n == 0 {
		fmt.Fprintln(f.errOut, "no ACL matched")
	}
	return nil
}
