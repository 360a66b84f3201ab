package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentchat/agentchat/internal/tool"
)

// chart is make_chart: it turns a series of numbers into chart data a
// client can draw (seed 002's chart_data). Its output can be large, which
// is what stores it by reference in the message history.
type chart struct{}

// maxChartPoints bounds one chart.
const maxChartPoints = 10000

func (chart) Spec() tool.Spec {
	return tool.Spec{
		Name:        "make_chart",
		Description: "Make a line chart of a series of numbers; the client draws it from the returned chart_data.",
		Parameters: json.RawMessage(`{
			"type": "object",
			"properties": {
				"title": {"type": "string", "description": "Chart title."},
				"values": {"type": "string", "description": "The numbers, separated by commas or spaces."},
				"labels": {"type": "string", "description": "Optional labels of the points, comma-separated; default 1, 2, 3…"}
			},
			"required": ["values"],
			"additionalProperties": false
		}`),
		Confirm: tool.ConfirmNever,
		Source:  "builtin",
	}
}

// chartData is the output's chart_data.
type chartData struct {
	Type     string         `json:"type"`
	Title    string         `json:"title"`
	Labels   []string       `json:"labels"`
	Datasets []chartDataset `json:"datasets"`
}

type chartDataset struct {
	Label string    `json:"label"`
	Data  []float64 `json:"data"`
}

func (chart) Call(_ context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Title  string `json:"title"`
		Values string `json:"values"`
		Labels string `json:"labels"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return tool.Result{}, err
	}
	var values []float64
	for _, f := range strings.FieldsFunc(in.Values, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' || r == '，' }) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return tool.Result{}, fmt.Errorf("%q is not a number", f)
		}
		values = append(values, v)
	}
	if len(values) == 0 || len(values) > maxChartPoints {
		return tool.Result{}, fmt.Errorf("values must hold 1 to %d numbers", maxChartPoints)
	}
	labels := make([]string, len(values))
	given := strings.Split(in.Labels, ",")
	for i := range labels {
		if i < len(given) && strings.TrimSpace(given[i]) != "" && in.Labels != "" {
			labels[i] = strings.TrimSpace(given[i])
		} else {
			labels[i] = strconv.Itoa(i + 1)
		}
	}
	title := strings.TrimSpace(in.Title)
	if title == "" {
		title = "Chart"
	}
	out := struct {
		ChartData chartData `json:"chart_data"`
	}{chartData{Type: "line", Title: title, Labels: labels, Datasets: []chartDataset{{Label: title, Data: values}}}}
	return jsonResult(tool.StatusSuccess, fmt.Sprintf("Made the chart %q with %d points.", title, len(values)), out)
}
