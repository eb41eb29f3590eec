// Lints a Dockerfile with a real parser (dockerfile-ast, the one VS Code's
// Docker support uses): dockerfile-utils' validator for syntax and
// instruction errors, then ebzip's own rules for the image (issues #5, #27):
// a multi-stage build on a Debian 12 base (ARG BASE) whose build stage runs
// README's build steps with Debian's build packages, a final stage from the
// same plain Debian base with no -dev and no CUDA package and nothing copied
// from the CUDA toolkit (the GPU codec links the CUDA runtime statically), a
// non-root user, OCI labels, both ports exposed and a HEALTHCHECK that runs
// `ebzip health`. Exit 0 when clean, 1 with one line per problem.
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
const dockerfile = DockerfileParser.parse(content);
const stages = [];
for (const instruction of dockerfile.getInstructions()) {
  const keyword = instruction.getKeyword();
  if (keyword === "FROM") {
    stages.push({ from: instruction, instructions: [] });
  } else if (stages.length > 0) {
    stages[stages.length - 1].instructions.push(instruction);
  }
}
const of = (stage, keyword) => stage.instructions.filter((i) => i.getKeyword() === keyword);
const text = (i) => i.getArgumentsContent() ?? "";

const baseArg = dockerfile.getInitialARGs().find((a) => a.getProperty()?.getName() === "BASE");
if (!/^debian:bookworm\b/.test(baseArg?.getProperty()?.getValue() ?? "")) {
  problems.push(`${path}: want ARG BASE=debian:bookworm-slim before the first FROM (the Debian 12 base)`);
}

if (stages.length < 2) {
  problems.push(`${path}: want a multi-stage build (build, then runtime); found ${stages.length} stage(s)`);
} else {
  const runtime = stages[stages.length - 1];
  // README's set-up commands build with `make build`: the image must build the same way.
  const build = stages.find((s) => s !== runtime && of(s, "RUN").some((r) => /\bmake build\b/.test(text(r))));
  if (!build) {
    problems.push(`${path}: a build stage must build with README's steps (make build)`);
  } else {
    if (build.from.getImage() !== "${BASE}") {
      problems.push(`${at(build.from)}: the build stage must start from \${BASE} (Debian 12)`);
    }
    if (!of(build, "RUN").some((r) => /\bEBZIP_DEPS=build scripts\/install_deps\.sh\b/.test(text(r)))) {
      problems.push(`${at(build.from)}: the build stage must install Debian's build packages with EBZIP_DEPS=build scripts/install_deps.sh`);
    }
  }
  if (runtime.from.getImage() !== "${BASE}") {
    problems.push(`${at(runtime.from)}: the final stage must start from \${BASE} (plain Debian 12), not ${runtime.from.getImage()}`);
  }
  for (const r of of(runtime, "RUN")) {
    const dev = text(r).match(/\S+-dev\b/);
    if (dev) problems.push(`${at(r)}: the runtime stage installs a development package (${dev[0]})`);
    // The driver comes from the NVIDIA container toolkit at run time; the
    // CUDA runtime is linked into the binaries.
    const cuda = text(r).match(/\b(?:cuda-\S+|libcudart\S*|libnvidia-\S+|nvidia-\S+)/);
    if (cuda) problems.push(`${at(r)}: the runtime stage installs a CUDA or NVIDIA package (${cuda[0]})`);
  }
  for (const c of of(runtime, "COPY")) {
    const from = c.getFlags().find((f) => f.getName() === "from")?.getValue();
    if (from !== undefined && from !== build?.from.getBuildStage()) {
      problems.push(`${at(c)}: the runtime stage copies from ${from}; only the build stage's outputs belong in it`);
    }
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
  // Exec form, running `ebzip health` itself or through `sh -c "exec ..."`.
  if (!/CMD\s+\[\s*"[^"]*\/ebzip",\s*"health"/.test(check) &&
      !/CMD\s+\[\s*"\/bin\/sh",\s*"-c",\s*"exec \S*\/ebzip health\b/.test(check)) {
    problems.push(`${at(runtime.from)}: want HEALTHCHECK CMD ["/usr/local/bin/ebzip", "health", ...] or CMD ["/bin/sh", "-c", "exec /usr/local/bin/ebzip health ..."]`);
  }
  const entry = of(runtime, "ENTRYPOINT");
  if (entry.length === 0 || !/^\[\s*"[^"]*\/ebzipd"/.test(text(entry[entry.length - 1]))) {
    // Exec form: ebzipd is PID 1 and receives SIGTERM itself, which starts its drain.
    problems.push(`${at(runtime.from)}: want ENTRYPOINT ["/usr/local/bin/ebzipd"] (exec form)`);
  }
}

for (const p of problems) console.log(p);
process.exit(problems.length === 0 ? 0 : 1);
