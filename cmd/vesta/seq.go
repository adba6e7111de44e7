package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/vesta-go/vesta/cmd/vesta/assemble"
	"github.com/vesta-go/vesta/segment"
	"github.com/vesta-go/vesta/segment/mysqlstore"
)

// seqTimeout bounds one store command of `vesta seq`.
const seqTimeout = 10 * time.Second

func newSeqCmd() *cobra.Command {
	var configFile string
	cmd := &cobra.Command{
		Use:   "seq",
		Short: "Create and list segment sequence tags in the store (segment.store)",
		Long: `Create and list the tags of segment sequences (Leaf's segment mode) in the
store that segment.store names: Leaf's leaf_alloc table (mysql) or Redis.
The store comes from the configuration of vesta serve: the YAML file
(--config, VESTA_CONFIG or the first found, as serve finds it), then VESTA_*
variables, e.g.
VESTA_SEGMENT_STORE=mysql VESTA_SEGMENT_DSN='user:pw@tcp(db:3306)/leaf'.`,
	}
	addConfigFlag(cmd.PersistentFlags(), &configFile)
	cmd.AddCommand(newSeqCreateCmd(&configFile), newSeqListCmd(&configFile))
	return cmd
}

func newSeqCreateCmd(configFile *string) *cobra.Command {
	var start, step int64
	var desc string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "create TAG --start N --step S [--desc D]",
		Short: "Create a tag: its first number is N, its ranges S numbers long",
		Long: `Create a tag in the store, as Leaf's INSERT INTO leaf_alloc(biz_tag, max_id,
step, description): the tag issues N first (Leaf's max_id), and each range
reserved from the store holds S numbers (the dynamic step grows from S, up to
segment.max_step, when ranges are used up quickly). With the mysql store the
table is created first if missing. Running servers serve the tag within
segment.refresh_tags, or at once on a miss. TAG is 1-128 characters of
A-Z a-z 0-9 _ . : -.`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			tag := args[0]
			if err := segment.ValidTag(tag); err != nil {
				return usage("TAG", err)
			}
			switch {
			case !cmd.Flags().Changed("step"):
				return fmt.Errorf("%w: --step is required: how many numbers one range holds (Leaf's step), e.g. 1000", errUsage)
			case start < 1 || start > math.MaxInt64/2:
				return fmt.Errorf("%w: --start %d; want 1-%d", errUsage, start, int64(math.MaxInt64/2))
			case step < 1 || step > math.MaxInt32:
				return fmt.Errorf("%w: --step %d; want 1-%d", errUsage, step, math.MaxInt32)
			case len(desc) > segment.MaxDescriptionLen:
				return fmt.Errorf("%w: --desc is %d bytes; want at most %d", errUsage, len(desc), segment.MaxDescriptionLen)
			}
			store, ctx, done, err := seqStore(cmd, *configFile)
			if err != nil {
				return err
			}
			defer done()
			if ms, ok := store.(*mysqlstore.Store); ok {
				if err := ms.CreateTable(ctx); err != nil {
					return fmt.Errorf("creating the table: %w", err)
				}
			}
			err = store.Create(ctx, segment.TagInfo{Tag: tag, MaxID: start, Step: step, Description: desc})
			if errors.Is(err, segment.ErrTagExists) {
				return fmt.Errorf("tag %q exists already (vesta seq list shows it)", tag)
			}
			if errors.Is(err, segment.ErrConfig) {
				// A bound of the store itself (Redis numbers stay below 2^53).
				return fmt.Errorf("%w: --start %d, --step %d: %w", errUsage, start, step, err)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					Tag   string `json:"tag"`
					MaxID string `json:"max_id"`
					Step  int64  `json:"step"`
				}{tag, fmt.Sprint(start), step})
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "created %s: first number %d, step %d\n", tag, start, step)
			return err
		},
	}
	cmd.Flags().Int64Var(&start, "start", 1, "the first number the tag issues (Leaf's max_id)")
	cmd.Flags().Int64Var(&step, "step", 0, "numbers per range reserved from the store (Leaf's step); required")
	cmd.Flags().StringVar(&desc, "desc", "", "description (Leaf's description), at most 256 bytes")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"tag", "max_id" (a string), "step"}`)
	return cmd
}

func newSeqListCmd(configFile *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the tags of the store: max_id (the next range starts there), step, description",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, ctx, done, err := seqStore(cmd, *configFile)
			if err != nil {
				return err
			}
			defer done()
			tags, err := store.Tags(ctx)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				type row struct {
					Tag         string `json:"tag"`
					MaxID       string `json:"max_id"`
					Step        int64  `json:"step"`
					Description string `json:"description"`
					Updated     string `json:"updated,omitempty"`
				}
				rows := make([]row, 0, len(tags))
				for _, t := range tags {
					rows = append(rows, row{t.Tag, fmt.Sprint(t.MaxID), t.Step, t.Description, formatUpdated(t.Updated)})
				}
				return writeJSON(out, rows)
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TAG\tMAX_ID\tSTEP\tUPDATED\tDESCRIPTION")
			for _, t := range tags {
				fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\n", printable(t.Tag, ""), t.MaxID, t.Step, formatUpdated(t.Updated), printable(t.Description, ""))
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array (max_id as a string)")
	return cmd
}

func formatUpdated(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// seqStore opens the store of the configuration, which must name one, and
// a context of the command's bounded by seqTimeout for its calls; done
// closes both.
func seqStore(cmd *cobra.Command, configFile string) (segment.Store, context.Context, func(), error) {
	loaded, err := loadConfig(cmd, configFile, false)
	if err != nil {
		return nil, nil, nil, err
	}
	if !loaded.Config.Segment.Enabled() {
		return nil, nil, nil, fmt.Errorf(`%w: segment.store is "" (off): set it to mysql or redis in the config file (%s) or VESTA_SEGMENT_STORE`, errConfig, fileOf(loaded))
	}
	st, err := assemble.OpenSegmentStore(loaded.Config.Segment)
	if errors.Is(err, assemble.ErrConfig) {
		return nil, nil, nil, fmt.Errorf("%w: %w", errConfig, loaded.Attribute(err))
	}
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), seqTimeout)
	return st, ctx, func() { cancel(); st.Close() }, nil
}
