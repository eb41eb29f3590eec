// Lints a Dockerfile with a real parser (dockerfile-ast, the one VS Code's
// Docker support uses): dockerfile-utils' validator for syntax and
// instruction errors, then ebzip's own rules for the image (issue #5):
// a multi-stage build from the CUDA devel image that runs README's build
// steps, a runtime stage from the CUDA runtime image with no -dev package,
// a non-root user, OCI labels, both ports exposed and a HEALTHCHECK that
// runs `ebzip health`. Exit 0 when clean, 1 with one line per problem.
//
//   node lint.mjs path/to/Dockerfile
import { readFileSync } from "node:fs";
import { DockerfileParser } from "dockerfile-ast";
import { validate } from "dockerfile-utils";

const path = process.argv[2];
const content = readFileSync(path, "utf8");
const problems = [];
const at = (instruction) => `${path}:${instruction.getRange().start.line + 1}`;

for (const d of validate(content)) {
  problems.push(`${path}:${d.range.start.line + 1}: ${d.message}`);
}

// Stages: the instructions from one FROM up to the next.
const stages = [];
for (const instruction of DockerfileParser.parse(content).getInstructions()) {
  const keyword = instruction.getKeyword();
  if (keyword === "FROM") {
    stages.push({ from: instruction, instructions: [] });
  } else if (stages.length > 0) {
    stages[stages.length - 1].instructions.push(instruction);
  }
}
const of = (stage, keyword) => stage.instructions.filter((i) => i.getKeyword() === keyword);
const text = (i) => i.getArgumentsContent() ?? "";

if (stages.length < 2) {
  problems.push(`${path}: want a multi-stage build (build, then runtime); found ${stages.length} stage(s)`);
} else {
  const build = stages[0];
  const runtime = stages[stages.length - 1];
  if (!/nvidia\/cuda:.*-devel-/.test(build.from.getImage() ?? "")) {
    problems.push(`${at(build.from)}: the build stage must start from a CUDA devel image`);
  }
  if (!/nvidia\/cuda:.*-runtime-/.test(runtime.from.getImage() ?? "")) {
    problems.push(`${at(runtime.from)}: the final stage must start from a CUDA runtime image`);
  }
  // README's set-up commands build with `make build` (which installs the
  // packages through scripts/install_deps.sh): the image must build the same way.
  if (!of(build, "RUN").some((r) => /\bmake build\b/.test(text(r)))) {
    problems.push(`${at(build.from)}: the build stage must build with README's steps (make build)`);
  }
  for (const r of of(runtime, "RUN")) {
    const dev = text(r).match(/\S+-dev\b/);
    if (dev) problems.push(`${at(r)}: the runtime stage installs a development package (${dev[0]})`);
  }
  const users = of(runtime, "USER");
  const user = users.length ? text(users[users.length - 1]).split(":")[0].trim() : "";
  if (user === "" || user === "root" || user === "0") {
    problems.push(`${at(runtime.from)}: the runtime stage must switch to a non-root USER`);
  }
  const exposed = new Set(of(runtime, "EXPOSE").flatMap((e) => text(e).split(/\s+/)));
  for (const port of ["50051", "9464"]) {
    if (!exposed.has(port)) problems.push(`${at(runtime.from)}: EXPOSE ${port} is missing`);
  }
  const labels = new Set(of(runtime, "LABEL").flatMap((l) => l.getProperties().map((p) => p.getName())));
  for (const key of ["title", "description", "version", "revision"]) {
    if (!labels.has(`org.opencontainers.image.${key}`)) {
      problems.push(`${at(runtime.from)}: OCI label org.opencontainers.image.${key} is missing`);
    }
  }
  const checks = of(runtime, "HEALTHCHECK");
  const check = checks.length ? text(checks[checks.length - 1]) : "";
  if (!/CMD\s+\[\s*"[^"]*\/ebzip",\s*"health"/.test(check)) {
    problems.push(`${at(runtime.from)}: want HEALTHCHECK CMD ["/usr/local/bin/ebzip", "health", ...]`);
  }
  const entry = of(runtime, "ENTRYPOINT");
  if (entry.length === 0 || !/^\[\s*"[^"]*\/ebzipd"/.test(text(entry[entry.length - 1]))) {
    // Exec form: ebzipd is PID 1 and receives SIGTERM itself, which starts its drain.
    problems.push(`${at(runtime.from)}: want ENTRYPOINT ["/usr/local/bin/ebzipd"] (exec form)`);
  }
}

for (const p of problems) console.log(p);
process.exit(problems.length === 0 ? 0 : 1);
