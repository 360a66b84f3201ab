package main

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/agentchat/agentchat/internal/config"
	"github.com/agentchat/agentchat/internal/engine"
	"github.com/agentchat/agentchat/internal/engine/chain"
	"github.com/agentchat/agentchat/internal/engine/local"
	"github.com/agentchat/agentchat/internal/engine/openclaw"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/telemetry"
	"github.com/agentchat/agentchat/internal/tool"
)

// newRouter builds the engine router the configuration describes: the
// local agent loop always, the openclaw engine when a gateway is configured,
// the chain engine (planner → executor → check over the same model and
// tools), the default engine and the per-tenant rules. It returns the
// OpenClaw gateways' names too: an agent may name one as its engine.
func newRouter(cfg config.Config, model llm.Model, tools *tool.Registry, parts contextParts, log *slog.Logger, tel *telemetry.Telemetry) (*engine.Router, []string, error) {
	ec, err := cfg.Engines()
	if err != nil {
		return nil, nil, err
	}
	var gatewayNames []string
	lc := local.Config{Model: model, Tools: tools, MaxIterations: cfg.MaxIterations, SystemPrompt: cfg.SystemPrompt, Logger: log}
	parts.apply(&lc)
	loc := local.New(lc)
	engines := map[string]engine.Engine{config.EngineLocal: loc}
	engines[config.EngineChain] = chain.New(chain.Config{Model: model, Tools: tools, Executor: loc, HardLimit: cfg.ChainHardLimit,
		SystemPrompt: cfg.SystemPrompt, Logger: log})
	if ec.UsesOpenClaw() {
		gateways := map[string]openclaw.Gateway{}
		for name, g := range ec.Gateways {
			gateways[name] = openclaw.Gateway{URL: g.URL, Token: g.Token, AgentID: g.AgentID,
				SendHistory: g.SendHistory, NoTools: g.NoTools, SystemPrompt: g.SystemPrompt}
		}
		var fallback engine.Engine
		if ec.Fallback == config.EngineLocal {
			fallback = loc
		}
		oc, err := openclaw.New(openclaw.Config{
			Gateways: gateways, Tenants: ec.TenantGateways(), Default: ec.DefaultGateway, Tools: tools,
			MaxIterations: cfg.MaxIterations, Fallback: fallback, Timeout: cfg.LLMTimeout, Logger: log, Telemetry: tel,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("engine: %w", err)
		}
		engines[config.EngineOpenClaw] = oc
		gatewayNames = slices.Sorted(maps.Keys(gateways))
		log.Info("openclaw engine ready", "gateways", len(gateways), "default_gateway", ec.DefaultGateway, "fallback", ec.Fallback)
	}
	return &engine.Router{Engines: engines, Default: ec.Default, TenantDefaults: ec.TenantDefaults()}, gatewayNames, nil
}
