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
  store            = "bigtable"
  longterm_memory  = module.memory.longterm_memory
  model            = var.model
  image_tag        = var.image_tag
  max_workers      = var.max_workers
  launcher_members = var.launcher_members
}

module "memory" {
  source = "../../modules/bigtable_store"

  project_id             = module.deployment.project_id
  instance_name          = "triage-memory"
  zone                   = coalesce(var.zone, "${var.region}-b")
  max_age                = var.memory_max_age
  worker_service_account = module.deployment.service_account_email
  deletion_protection    = var.deletion_protection
}
