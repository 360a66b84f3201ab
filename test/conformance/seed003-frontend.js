const es = new EventSource('/v1/chain/stream?user_input=你的输入');

es.addEventListener('chain.step', e => {
  const env = JSON.parse(e.data);
  setActiveStep(env.payload);
});

es.addEventListener('planner.plan', e => {
  const env = JSON.parse(e.data);
  renderPlan(env.payload);
});

es.addEventListener('call.end', e => {
  const env = JSON.parse(e.data);
  appendToolCard(env.payload);
});

es.addEventListener('call.start', e => {
  const env = JSON.parse(e.data);
  appendToolCard(env.payload);
});

es.addEventListener('check.summary', e => {
  const env = JSON.parse(e.data);
  renderCheck(env.payload);
});

es.addEventListener('final', e => {
  const env = JSON.parse(e.data);
  setResult(env.payload);
  es.close();
});
