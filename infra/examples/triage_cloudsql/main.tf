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

  project_id             = var.project_id
  region                 = var.region
  store                  = "postgres"
  longterm_memory_secret = module.memory.longterm_memory
  model                  = var.model
  image_tag              = var.image_tag
  subnet_cidr            = var.subnet_cidr
  max_workers            = var.max_workers
  launcher_members       = var.launcher_members
}

module "memory" {
  source = "../../modules/postgres_store"

  project_id             = module.deployment.project_id
  region                 = var.region
  instance_name          = "triage-memory"
  tier                   = var.sql_tier
  private_network        = module.deployment.network_id
  allocated_ip_range     = module.deployment.private_services_range
  worker_service_account = module.deployment.service_account_email
  deletion_protection    = var.deletion_protection
}
