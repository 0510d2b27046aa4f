provider "google" {
  project = var.project_id
  region  = var.region
}

provider "google-beta" {
  project = var.project_id
  region  = var.region
}

# What every triage example shares (modules/triage_deployment): the APIs, the Dataflow
# runtime and job, the launcher parameters and, as the store needs, a VPC with private
# service access or the secret holding a store URI that carries a credential.
module "deployment" {
  source = "../../modules/triage_deployment"

  project_id       = var.project_id
  region           = var.region
  store            = "firestore"
  longterm_memory  = module.memory.longterm_memory
  model            = var.model
  image_tag        = var.image_tag
  max_workers      = var.max_workers
  launcher_members = var.launcher_members
}

module "memory" {
  source = "../../modules/firestore_store"

  project_id             = module.deployment.project_id
  location_id            = coalesce(var.firestore_location, var.region)
  database_name          = "triage-memory"
  ttl_enabled            = var.ttl_enabled
  worker_service_account = module.deployment.service_account_email
}
