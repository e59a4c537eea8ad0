// promql-eval evaluates a Grafana dashboard's Prometheus queries over recorded scrapes with
// Prometheus' own PromQL engine and TSDB, and prints each panel's series as JSON: what the
// dashboard would show, from real data, without a Prometheus server.
//
//	promql-eval -scrapes scrapes.txt -dashboard dashboard.json [-step 2s] [-panels 'A|B']
//
// The scrapes file holds Prometheus text expositions, each after a line `# scrape <unix-ms>`;
// every sample gets the target labels `instance` and `job` a scrape would give it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/tsdb"
)

type dashboard struct {
	Panels []struct {
		Title       string `json:"title"`
		FieldConfig struct {
			Defaults struct {
				Unit string `json:"unit"`
			} `json:"defaults"`
		} `json:"fieldConfig"`
		Targets []struct {
			Expr         string `json:"expr"`
			LegendFormat string `json:"legendFormat"`
		} `json:"targets"`
	} `json:"panels"`
}

type series struct {
	Expr   string       `json:"expr"`
	Legend string       `json:"legend"`
	Points [][2]float64 `json:"points"`
}

type panel struct {
	Title  string   `json:"title"`
	Unit   string   `json:"unit"`
	Series []series `json:"series"`
}

func main() {
	scrapes := flag.String("scrapes", "", "recorded scrapes")
	dashboardPath := flag.String("dashboard", "", "Grafana dashboard JSON")
	step := flag.Duration("step", 2*time.Second, "query resolution")
	only := flag.String("panels", "", "panel titles to evaluate, |-separated (all when empty)")
	instance := flag.String("instance", "pipewarden:9090", "the target's instance label")
	job := flag.String("job", "pipewarden", "the target's job label")
	flag.Parse()
	if err := run(*scrapes, *dashboardPath, *step, *only, *instance, *job); err != nil {
		fmt.Fprintln(os.Stderr, "promql-eval:", err)
		os.Exit(1)
	}
}

func run(scrapesPath, dashboardPath string, step time.Duration, only, instance, job string) error {
	dir, err := os.MkdirTemp("", "promql-eval-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := tsdb.Open(dir, nil, nil, tsdb.DefaultOptions(), nil)
	if err != nil {
		return err
	}
	defer db.Close()
	first, last, err := load(db, scrapesPath, instance, job)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(dashboardPath)
	if err != nil {
		return err
	}
	var board dashboard
	if err := json.Unmarshal(raw, &board); err != nil {
		return err
	}
	wanted := map[string]bool{}
	for _, title := range strings.Split(only, "|") {
		if title != "" {
			wanted[title] = true
		}
	}
	engine := promql.NewEngine(promql.EngineOpts{
		MaxSamples:    50_000_000,
		Timeout:       time.Minute,
		LookbackDelta: 5 * time.Minute,
	})
	out := struct {
		Start  int64   `json:"start"`
		End    int64   `json:"end"`
		Panels []panel `json:"panels"`
	}{Start: first, End: last}
	for _, p := range board.Panels {
		if len(wanted) > 0 && !wanted[p.Title] {
			continue
		}
		evaluated := panel{Title: p.Title, Unit: p.FieldConfig.Defaults.Unit}
		for _, target := range p.Targets {
			query, err := engine.NewRangeQuery(context.Background(), db, nil, target.Expr,
				time.UnixMilli(first), time.UnixMilli(last), step)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", p.Title, target.Expr, err)
			}
			result := query.Exec(context.Background())
			if result.Err != nil {
				return fmt.Errorf("%s: %s: %w", p.Title, target.Expr, result.Err)
			}
			matrix, err := result.Matrix()
			if err != nil {
				return fmt.Errorf("%s: %s: %w", p.Title, target.Expr, err)
			}
			for _, s := range matrix {
				points := make([][2]float64, 0, len(s.Floats))
				for _, f := range s.Floats {
					if !math.IsNaN(f.F) {
						points = append(points, [2]float64{float64(f.T), f.F})
					}
				}
				evaluated.Series = append(evaluated.Series, series{
					Expr:   target.Expr,
					Legend: legend(target.LegendFormat, s.Metric),
					Points: points,
				})
			}
			query.Close()
		}
		out.Panels = append(out.Panels, evaluated)
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", " ")
	return encoder.Encode(out)
}

// load appends every sample of every scrape; returns the first and last scrape times.
func load(db *tsdb.DB, path, instance, job string) (int64, int64, error) {
	file, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer file.Close()
	var first, last, at int64 = -1, 0, 0
	var body bytes.Buffer
	flush := func() error {
		if body.Len() == 0 {
			return nil
		}
		defer body.Reset()
		return appendScrape(db, body.Bytes(), at, instance, job)
	}
	lines := bufio.NewScanner(file)
	lines.Buffer(make([]byte, 1<<20), 1<<24)
	for lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "# scrape "); ok {
			if err := flush(); err != nil {
				return 0, 0, err
			}
			at, err = strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("%q: %w", line, err)
			}
			if first < 0 {
				first = at
			}
			last = at
			continue
		}
		body.WriteString(line)
		body.WriteByte('\n')
	}
	if err := lines.Err(); err != nil {
		return 0, 0, err
	}
	if err := flush(); err != nil {
		return 0, 0, err
	}
	if first < 0 {
		return 0, 0, fmt.Errorf("%s holds no scrape", path)
	}
	return first, last, nil
}

func appendScrape(db *tsdb.DB, text []byte, at int64, instance, job string) error {
	parser := textparse.NewPromParser(text, labels.NewSymbolTable(), false)
	app := db.Appender(context.Background())
	for {
		entry, err := parser.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("scrape at %d: %w", at, err)
		}
		if entry != textparse.EntrySeries {
			continue
		}
		_, _, value := parser.Series()
		var lset labels.Labels
		parser.Labels(&lset)
		builder := labels.NewBuilder(lset)
		builder.Set("instance", instance)
		builder.Set("job", job)
		if _, err := app.Append(0, builder.Labels(), at, value); err != nil {
			return fmt.Errorf("scrape at %d: %s: %w", at, lset, err)
		}
	}
	return app.Commit()
}

var placeholder = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)

// legend fills a Grafana legend format (`{{state}}`) from a series' labels.
func legend(format string, metric labels.Labels) string {
	if format == "" {
		return metric.String()
	}
	return placeholder.ReplaceAllStringFunc(format, func(m string) string {
		return metric.Get(placeholder.FindStringSubmatch(m)[1])
	})
}
