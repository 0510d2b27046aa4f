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
  ]), local.store_services[var.store], var.subnet_cidr == null ? [] : ["servicenetworking.googleapis.com"])
  # Decided by a plain input: a count cannot depend on the sensitive one.
  uri_is_secret = var.longterm_memory == null
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

  depends_on = [google_project_service.this]
}

# A store URI that carries a credential never travels as a job parameter: it lives in
# Secret Manager and the launcher passes only the secret version's name (longterm_secret).
resource "google_secret_manager_secret" "longterm" {
  count = local.uri_is_secret ? 1 : 0

  project   = var.project_id
  secret_id = "${local.name}-longterm"

  replication {
    auto {}
  }

  depends_on = [google_project_service.this]
}

resource "google_secret_manager_secret_version" "longterm" {
  count = local.uri_is_secret ? 1 : 0

  secret      = google_secret_manager_secret.longterm[0].id
  secret_data = var.longterm_memory_secret
}

resource "google_secret_manager_secret_iam_member" "longterm_accessor" {
  count = local.uri_is_secret ? 1 : 0

  project   = var.project_id
  secret_id = google_secret_manager_secret.longterm[0].secret_id
  role      = "roles/secretmanager.secretAccessor"
  member    = "serviceAccount:${module.runtime.service_account_email}"
}

locals {
  # The Flex Template parameters (app/metadata.json); `make deploy` reads them from the
  # launcher_parameters output. None is a secret. Of longterm and longterm_secret only the
  # one in use is kept, chosen by a key known at plan time (the secret's name is not).
  parameters = {
    input_subscription   = module.runtime.subscriptions["alerts"]
    answers_subscription = module.runtime.subscriptions["answers"]
    outputs_topic        = module.runtime.topics["outputs"]
    intents_topic        = module.runtime.topics["intents"]
    errors_topic         = module.runtime.topics["errors"]
    lifecycle_topic      = module.runtime.topics["lifecycle"]
    model                = var.model
    longterm             = var.longterm_memory
    longterm_secret      = one(google_secret_manager_secret_version.longterm[*].name)
  }
  unused_parameter    = local.uri_is_secret ? "longterm" : "longterm_secret"
  launcher_parameters = { for key, value in local.parameters : key => value if key != local.unused_parameter }
}

# The streaming job itself, once `make deploy` has built the image and template: apply again
# with -var image_tag=TAG to let Terraform own the job (see docs/deploy.md).
module "job" {
  source = "../dataflow_job"
  count  = var.image_tag == null ? 0 : 1

  project_id            = var.project_id
  region                = var.region
  name                  = local.name
  template_path         = module.runtime.template_path
  image                 = "${module.runtime.image_repository}/${local.name}:${var.image_tag}"
  parameters            = local.launcher_parameters
  service_account_email = module.runtime.service_account_email
  temp_location         = module.runtime.temp_location
  staging_location      = module.runtime.staging_location
  subnetwork            = one(google_compute_subnetwork.workers[*].self_link)
  max_workers           = var.max_workers
}
