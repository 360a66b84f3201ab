package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	// Embedded zone data, so get_current_time works in minimal containers
	// (distroless, scratch) that ship no /usr/share/zoneinfo. It is only
	// consulted when the system database is missing.
	_ "time/tzdata"

	"github.com/agentchat/agentchat/internal/tool"
)

// currentTime is get_current_time.
type currentTime struct {
	now func() time.Time
}

func (currentTime) Spec() tool.Spec {
	return tool.Spec{
		Name:        "get_current_time",
		Description: "Get the current date and time, in UTC or in a given IANA time zone.",
		Parameters: json.RawMessage(`{
			"type": "object",
			"properties": {
				"timezone": {"type": "string", "description": "IANA time zone name, e.g. Europe/Paris or Asia/Shanghai. Default UTC."}
			},
			"additionalProperties": false
		}`),
		Confirm: tool.ConfirmNever,
		Source:  "builtin",
	}
}

func (c currentTime) Call(_ context.Context, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Timezone string `json:"timezone"`
	}
	if err := decodeArgs(args, &in); err != nil {
		return tool.Result{}, err
	}
	name := strings.TrimSpace(in.Timezone)
	if name == "" {
		name = "UTC"
	}
	// "Local" would answer with this server's zone, which means nothing to
	// the person asking; time.LoadLocation accepts it, so refuse it here.
	if strings.EqualFold(name, "local") {
		return tool.Result{}, fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Paris", in.Timezone)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return tool.Result{}, fmt.Errorf("unknown time zone %q: use an IANA name such as Europe/Paris", in.Timezone)
	}
	t := c.now().In(loc)
	out := struct {
		Time     string `json:"time"`
		Timezone string `json:"timezone"`
		Unix     int64  `json:"unix"`
	}{t.Format(time.RFC3339), loc.String(), t.Unix()}
	return jsonResult(tool.StatusSuccess, fmt.Sprintf("%s (%s, %s)", out.Time, out.Timezone, t.Format("Monday")), out)
}
