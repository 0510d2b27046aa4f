provider "google" {
  project = var.project_id
  region  = var.region
}

provider "google-beta" {
  project = var.project_id
  region  = var.region
}

locals {
  services = toset([
    "artifactregistry.googleapis.com",
    "cloudbuild.googleapis.com",
    "compute.googleapis.com",
    "dataflow.googleapis.com",
    "firestore.googleapis.com",
    "pubsub.googleapis.com",
    "secretmanager.googleapis.com",
    "storage.googleapis.com",
  ])
}

resource "google_project_service" "this" {
  for_each = local.services

  project            = var.project_id
  service            = each.value
  disable_on_destroy = false
}

module "runtime" {
  source = "../../modules/dataflow_runtime"

  project_id       = var.project_id
  region           = var.region
  name             = "triage"
  input_topics     = ["alerts", "answers"]
  output_topics    = ["outputs", "intents", "errors", "lifecycle"]
  launcher_members = var.launcher_members

  depends_on = [google_project_service.this]
}

module "memory" {
  source = "../../modules/firestore_store"

  project_id             = var.project_id
  location_id            = coalesce(var.firestore_location, var.region)
  database_name          = "triage-memory"
  ttl_enabled            = var.ttl_enabled
  worker_service_account = module.runtime.service_account_email

  depends_on = [google_project_service.this]
}

locals {
  # The Flex Template parameters (app/metadata.json); `make deploy` reads them from the
  # launcher_parameters output. None is a secret.
  parameters = {
    input_subscription   = module.runtime.subscriptions["alerts"]
    answers_subscription = module.runtime.subscriptions["answers"]
    outputs_topic        = module.runtime.topics["outputs"]
    intents_topic        = module.runtime.topics["intents"]
    errors_topic         = module.runtime.topics["errors"]
    lifecycle_topic      = module.runtime.topics["lifecycle"]
    model                = var.model
    longterm             = module.memory.longterm_memory
  }
}

# The streaming job itself, once `make deploy` has built the image and template: apply again
# with -var image_tag=TAG to let Terraform own the job (see docs/deploy.md).
module "job" {
  source = "../../modules/dataflow_job"
  count  = var.image_tag == null ? 0 : 1

  project_id            = var.project_id
  region                = var.region
  name                  = "triage"
  template_path         = module.runtime.template_path
  image                 = "${module.runtime.image_repository}/triage:${var.image_tag}"
  parameters            = local.parameters
  service_account_email = module.runtime.service_account_email
  temp_location         = module.runtime.temp_location
  staging_location      = module.runtime.staging_location
  max_workers           = var.max_workers
}
