// Validate custom resources against their operators' CRD schemas, and parse PromQL with Prometheus' own grammar.
//
//   node validate.mjs "$(scripts/tools.sh node-validators)"  < request.json  > answer.json
//
// request: {"resources": [object, ...], "promql": ["expression", ...]}
// answer:  {"resources": [{"model": "<module it was checked with>", "errors": ["/spec/x must be integer", ...]}],
//           "promql": [{"errors": ["syntax error at 12"], "metrics": ["metric_name", ...]}]}
// A resource of an unknown apiVersion/kind answers an error, never a pass.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const PACKAGES = {
  "kafka.strimzi.io": "@kubernetes-models/strimzi-kafka-operator",
  "monitoring.coreos.com": "@kubernetes-models/prometheus-operator",
};

const folder = process.argv[2];
const modules = join(folder, "node_modules");
const load = (path) => import(pathToFileURL(join(modules, path)).href);

async function checkResource(resource) {
  const [group, version] = String(resource?.apiVersion ?? "").split("/");
  const kind = String(resource?.kind ?? "");
  const pkg = PACKAGES[group];
  if (!pkg || !version || !/^[A-Za-z]+$/.test(kind)) {
    return { model: null, errors: [`no schema for ${resource?.apiVersion} ${kind}`] };
  }
  const model = `${pkg}/${group}/${version}/${kind}.js`;
  let Model;
  try {
    Model = (await load(model))[kind];
  } catch {
    return { model: null, errors: [`no schema for ${resource.apiVersion} ${kind}`] };
  }
  try {
    new Model(resource).validate();
    return { model, errors: [] };
  } catch (error) {
    const found = (error.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`);
    return { model, errors: found.length ? found : [String(error.message)] };
  }
}

function parsePromQL(parser, expression) {
  const errors = [];
  const metrics = new Set();
  parser.parse(expression).iterate({
    enter(node) {
      if (node.type.isError) errors.push(`syntax error at ${node.from}`);
      // a selector's metric name is its Identifier child; label names and functions are other node types
      if (node.name === "Identifier" && node.node.parent?.name === "VectorSelector") {
        metrics.add(expression.slice(node.from, node.to));
      }
    },
  });
  return { errors, metrics: [...metrics].sort() };
}

const request = JSON.parse(readFileSync(0, "utf8"));
const { parser } = await load("@prometheus-io/lezer-promql/dist/index.es.js");
const answer = {
  resources: await Promise.all((request.resources ?? []).map(checkResource)),
  promql: (request.promql ?? []).map((expression) => parsePromQL(parser, expression)),
};
process.stdout.write(JSON.stringify(answer));
