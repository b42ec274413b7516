'use strict';
// Which CI run this process is part of, as the results app names it (its `ci` block): the run
// id and attempt, commit, branch, job and page, from GitHub Actions, GitLab CI, Buildkite,
// CircleCI, Jenkins or Azure Pipelines, or OBJSTORE_RESULTS_RUN. Run ids are made exactly as
// `objstore-results post` makes them, so that files posted by the reporter and by `post` from
// several jobs of one run are one run.

const MAX_LABEL = 64;

/**
 * `github-9876543210-1`; an id that is not a label as it stands keeps a readable start and a
 * hash (FNV-1a) of the whole.
 * @param {string} provider
 * @param {...string} parts
 */
function runId(provider, ...parts) {
  const raw = [provider, ...parts].join('-');
  const clean = [...raw].map((c) => (/^[A-Za-z0-9._-]$/.test(c) ? c : '-')).join('');
  const bytes = Buffer.from(raw);
  if (clean === raw && bytes.length <= MAX_LABEL) return raw;
  let h = 0xcbf29ce484222325n;
  for (const b of bytes) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return `${clean.slice(0, MAX_LABEL - 17)}-${h.toString(16).padStart(16, '0')}`;
}

/**
 * The CI block of this run: `run`, `commit`, `branch`, `url`, `job` where known.
 * @param {NodeJS.ProcessEnv} env
 * @returns {Record<string, string>}
 */
function detect(env) {
  /** @param {string} name */
  const v = (name) => (env[name] || '').trim() || undefined;
  /** @type {Record<string, string | undefined>} */
  let found = {};
  if (v('GITHUB_ACTIONS')) {
    const attempt = v('GITHUB_RUN_ATTEMPT') || '1';
    const run = v('GITHUB_RUN_ID');
    const [server, repository] = [v('GITHUB_SERVER_URL'), v('GITHUB_REPOSITORY')];
    found = {
      run: run && runId('github', run, attempt),
      commit: v('GITHUB_SHA'),
      branch: v('GITHUB_HEAD_REF') || v('GITHUB_REF_NAME'),
      url: server && repository && run ? `${server}/${repository}/actions/runs/${run}/attempts/${attempt}` : undefined,
      job: v('GITHUB_JOB'),
    };
  } else if (v('GITLAB_CI')) {
    const run = v('CI_PIPELINE_ID');
    found = {
      run: run && runId('gitlab', run),
      commit: v('CI_COMMIT_SHA'),
      branch: v('CI_MERGE_REQUEST_SOURCE_BRANCH_NAME') || v('CI_COMMIT_REF_NAME'),
      url: v('CI_JOB_URL') || v('CI_PIPELINE_URL'),
      job: v('CI_JOB_NAME'),
    };
  } else if (v('BUILDKITE')) {
    const run = v('BUILDKITE_BUILD_ID');
    found = {
      run: run && runId('buildkite', run, v('BUILDKITE_RETRY_COUNT') || '0'),
      commit: v('BUILDKITE_COMMIT'),
      branch: v('BUILDKITE_BRANCH'),
      url: v('BUILDKITE_BUILD_URL'),
      job: v('BUILDKITE_LABEL'),
    };
  } else if (v('CIRCLECI')) {
    const run = v('CIRCLE_WORKFLOW_ID');
    found = { run: run && runId('circleci', run), commit: v('CIRCLE_SHA1'), branch: v('CIRCLE_BRANCH'),
      url: v('CIRCLE_BUILD_URL'), job: v('CIRCLE_JOB') };
  } else if (v('JENKINS_URL')) {
    const run = v('BUILD_TAG');
    found = { run: run && runId('jenkins', run), commit: v('GIT_COMMIT'), branch: v('BRANCH_NAME') || v('GIT_BRANCH'),
      url: v('BUILD_URL'), job: v('JOB_NAME') };
  } else if (v('TF_BUILD')) {
    const run = v('BUILD_BUILDID');
    const [collection, project] = [v('SYSTEM_COLLECTIONURI'), v('SYSTEM_TEAMPROJECT')];
    const branch = v('SYSTEM_PULLREQUEST_SOURCEBRANCH') || v('BUILD_SOURCEBRANCH');
    found = {
      run: run && runId('azure', run, v('SYSTEM_JOBATTEMPT') || '1'),
      commit: v('BUILD_SOURCEVERSION'),
      branch: branch && branch.replace(/^refs\/heads\//, ''),
      url: collection && project && run ? `${collection.replace(/\/+$/, '')}/${project}/_build/results?buildId=${run}` : undefined,
      job: v('SYSTEM_JOBDISPLAYNAME'),
    };
  }
  if (v('OBJSTORE_RESULTS_RUN')) found.run = v('OBJSTORE_RESULTS_RUN');
  /** @type {Record<string, string>} */
  const ci = {};
  for (const [key, value] of Object.entries(found)) if (value) ci[key] = value;
  return ci;
}

module.exports = { detect, runId, MAX_LABEL };
