locals {
  name = "triage"
  # The APIs every triage deployment needs, plus its store's, plus service networking for
  # the private service access of network.tf.
  store_services = {
    bigtable  = ["bigtable.googleapis.com", "bigtableadmin.googleapis.com"]
    firestore = ["firestore.googleapis.com"]
    postgres  = ["sqladmin.googleapis.com"]
    redis     = ["redis.googleapis.com"]
  }
  services = setunion(toset([
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "compute.googleapis.com",
    "dataflow.googleapis.com",
    "pubsub.googleapis.com",
    "secretmanager.googleapis.com",
    "storage.googleapis.com",
  ]), local.store_services[var.store], local.private_services == 1 ? ["servicenetworking.googleapis.com"] : [])
}

resource "google_project_service" "this" {
  for_each = local.services

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

module "runtime" {
  source = "../dataflow_runtime"

  project_id       = var.project_id
  region           = var.region
  name             = local.name
  input_topics     = ["alerts", "answers"]
  output_topics    = ["outputs", "intents", "errors", "lifecycle"]
  launcher_members = var.launcher_members
  input_publishers = { for topic, members in { alerts = var.alert_publishers, answers = var.approvers } : topic => members if length(members) > 0 }
  kms_key_name     = var.kms_key_name

  depends_on = [google_project_service.this]
}

# The key spans and dead-letter logs hash entity keys under (the entity_hash_secret
# parameter), and the key approval answers are signed with (the answer_signing_secret
# parameter): without the latter anyone allowed to publish on the answers topic could
# decide any approval. Each is drawn on the first apply and written write-only, so it is
# never in state; the job names the version, not `latest`, so every worker of a job
# reads the same key. The workers read both; whoever signs answers (the console's runner
# identity, answer_signers) reads the signing key too; nobody else reads either.
module "entity_hash_key" {
  source = "../generated_key"

  project_id             = var.project_id
  secret_id              = "${local.name}-entity-hash"
  worker_service_account = module.runtime.service_account_email

  depends_on = [google_project_service.this]
}

module "answer_signing_key" {
  source = "../generated_key"

  project_id             = var.project_id
  secret_id              = "${local.name}-answer-signing"
  worker_service_account = module.runtime.service_account_email
  readers                = var.answer_signers

  depends_on = [google_project_service.this]
}

# Where these resources stood before the module: an existing deployment keeps its secrets
# and versions (a new hashing key would change every entity's hash).
moved {
  from = google_secret_manager_secret.entity_hash
  to   = module.entity_hash_key.google_secret_manager_secret.this
}

moved {
  from = google_secret_manager_secret_version.entity_hash
  to   = module.entity_hash_key.google_secret_manager_secret_version.this
}

moved {
  from = google_secret_manager_secret_iam_member.entity_hash_worker
  to   = module.entity_hash_key.google_secret_manager_secret_iam_member.worker
}

moved {
  from = google_secret_manager_secret.answer_signing
  to   = module.answer_signing_key.google_secret_manager_secret.this
}

moved {
  from = google_secret_manager_secret_version.answer_signing
  to   = module.answer_signing_key.google_secret_manager_secret_version.this
}

moved {
  from = google_secret_manager_secret_iam_member.answer_signing_worker
  to   = module.answer_signing_key.google_secret_manager_secret_iam_member.worker
}

moved {
  from = google_secret_manager_secret_iam_member.answer_signing_signer
  to   = module.answer_signing_key.google_secret_manager_secret_iam_member.reader
}

locals {
  # The Flex Template parameters (app/metadata.json); `make deploy` reads them from the
  # launcher_parameters output. None is a secret: a store whose URI carries a credential
  # hands over `secretmanager://VERSION`, and the hashing and answer signing keys their
  # versions' names, which the workers read themselves.
  stream_parameters = {
    input_subscription    = module.runtime.subscriptions["alerts"]
    answers_subscription  = module.runtime.subscriptions["answers"]
    outputs_topic         = module.runtime.topics["outputs"]
    intents_topic         = module.runtime.topics["intents"]
    errors_topic          = module.runtime.topics["errors"]
    lifecycle_topic       = module.runtime.topics["lifecycle"]
    model                 = var.model
    longterm              = var.longterm_memory
    entity_hash_secret    = module.entity_hash_key.version_name
    answer_signing_secret = module.answer_signing_key.version_name
  }
  # The OTLP endpoint only when set: an empty job parameter is no endpoint at all.
  launcher_parameters = merge(
    local.stream_parameters,
    var.otlp_endpoint == null ? {} : { otlp_endpoint = var.otlp_endpoint },
  )
}

# The streaming job itself, once `make deploy` has built the image and template: apply again
# with -var image_digest=sha256:... to let Terraform own the job (see docs/deploy.md).
module "job" {
  source = "../dataflow_job"
  count  = var.image_digest == null ? 0 : 1

  project_id            = var.project_id
  region                = var.region
  name                  = local.name
  template_path         = module.runtime.template_path
  image                 = "${module.runtime.image_repository}/${local.name}@${var.image_digest}"
  parameters            = local.launcher_parameters
  service_account_email = module.runtime.service_account_email
  temp_location         = module.runtime.temp_location
  staging_location      = module.runtime.staging_location
  subnetwork            = google_compute_subnetwork.workers.self_link
  max_workers           = var.max_workers
  kms_key_name          = var.kms_key_name
}
