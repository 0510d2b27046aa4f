output "longterm_memory" {
  description = "Value for AgentConfig.longterm_memory: bigtable://PROJECT/INSTANCE/TABLE."
  value       = "bigtable://${var.project_id}/${local.instance_name}/${google_bigtable_table.memory.name}"
}

output "instance_name" {
  description = "Bigtable instance id (created or existing)."
  value       = local.instance_name
}

output "table_name" {
  description = "Table id that holds the memory rows."
  value       = google_bigtable_table.memory.name
}

output "column_family" {
  description = "Column family holding the seq and rec columns (always \"m\")."
  value       = "m"
}
