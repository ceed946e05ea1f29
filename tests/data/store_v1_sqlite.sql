-- A v1 ironic_fsm SQLite database as written by the SQLAlchemy-based SQLStore
-- (commit 2aaf771): schema, then two nodes, a reservation and a heartbeat.
CREATE TABLE holders (
	holder VARCHAR(255) NOT NULL, 
	heartbeat DATETIME NOT NULL, 
	PRIMARY KEY (holder)
);
INSERT INTO "holders" VALUES('old-conductor:1:abc','2025-01-02 03:04:05.678901');
CREATE TABLE ironic_fsm_schema (
	id INTEGER NOT NULL, 
	version INTEGER NOT NULL, 
	PRIMARY KEY (id)
);
INSERT INTO "ironic_fsm_schema" VALUES(1,1);
CREATE TABLE nodes (
	uuid VARCHAR(36) NOT NULL, 
	name VARCHAR(255), 
	driver VARCHAR(255) NOT NULL, 
	provision_state VARCHAR(64) NOT NULL, 
	maintenance BOOLEAN NOT NULL, 
	retired BOOLEAN NOT NULL, 
	reservation VARCHAR(255), 
	version INTEGER NOT NULL, 
	seq BIGINT NOT NULL, 
	created_at DATETIME NOT NULL, 
	data TEXT NOT NULL, 
	PRIMARY KEY (uuid), 
	CONSTRAINT uniq_nodes0name UNIQUE (name)
);
INSERT INTO "nodes" VALUES('11111111-1111-4111-8111-111111111111','old-rich','ipmi','available',1,0,NULL,2,1,'2024-02-29 23:59:58.123456','{"uuid":"11111111-1111-4111-8111-111111111111","name":"old-rich","driver":"ipmi","driver_info":{"ipmi_address":"10.0.0.7","ipmi_password":"s3cr3t"},"driver_internal_info":{},"properties":{},"instance_info":{},"extra":{"note":"ünïcødé ✓"},"traits":["CUSTOM_GPU"],"resource_class":null,"provision_state":"available","target_provision_state":null,"power_state":null,"target_power_state":null,"maintenance":true,"maintenance_reason":"fan","fault":null,"last_error":null,"retired":false,"retired_reason":null,"protected":false,"protected_reason":null,"automated_clean":null,"clean_step":null,"deploy_step":null,"service_step":null,"reservation":null,"provision_updated_at":null,"created_at":"2024-02-29T23:59:58.123456+00:00","updated_at":null,"version":1,"target_raid_config":{},"raid_config":{},"power_interface":null,"management_interface":null,"deploy_interface":null,"boot_interface":null,"bios_interface":null,"raid_interface":null,"inspect_interface":null,"rescue_interface":null,"vendor_interface":null,"firmware_interface":null}');
INSERT INTO "nodes" VALUES('22222222-2222-4222-8222-222222222222',NULL,'fake-hardware','enroll',0,1,'old-conductor:1:abc',2,2,'2024-02-29 23:59:59.123456','{"uuid":"22222222-2222-4222-8222-222222222222","name":null,"driver":"fake-hardware","driver_info":{},"driver_internal_info":{},"properties":{},"instance_info":{},"extra":{},"traits":[],"resource_class":null,"provision_state":"enroll","target_provision_state":null,"power_state":null,"target_power_state":null,"maintenance":false,"maintenance_reason":null,"fault":null,"last_error":null,"retired":true,"retired_reason":null,"protected":false,"protected_reason":null,"automated_clean":null,"clean_step":null,"deploy_step":null,"service_step":null,"reservation":null,"provision_updated_at":null,"created_at":"2024-02-29T23:59:59.123456+00:00","updated_at":null,"version":0,"target_raid_config":{},"raid_config":{},"power_interface":null,"management_interface":null,"deploy_interface":null,"boot_interface":null,"bios_interface":null,"raid_interface":null,"inspect_interface":null,"rescue_interface":null,"vendor_interface":null,"firmware_interface":null}');
CREATE INDEX nodes_driver_idx ON nodes (driver);
CREATE INDEX nodes_seq_idx ON nodes (seq);
CREATE INDEX nodes_provision_state_idx ON nodes (provision_state);
CREATE INDEX nodes_reservation_idx ON nodes (reservation);
