-- MySQL dump 10.13  Distrib 8.0.36, for Linux (x86_64)
--
-- Host: localhost    Database: yourls
-- ------------------------------------------------------
/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;
/*!50503 SET NAMES utf8mb4 */;
/*!40103 SET TIME_ZONE='+00:00' */;

DROP TABLE IF EXISTS `yourls_options`;
CREATE TABLE `yourls_options` (
  `option_id` bigint unsigned NOT NULL AUTO_INCREMENT,
  `option_name` varchar(64) NOT NULL DEFAULT '',
  `option_value` longtext NOT NULL,
  PRIMARY KEY (`option_id`,`option_name`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

LOCK TABLES `yourls_options` WRITE;
INSERT INTO `yourls_options` VALUES (1,'version','1.9.2'),(2,'db_version','506'),(3,'active_plugins','a:0:{}; (not a row)');
UNLOCK TABLES;

--
-- Table structure for table `yourls_url`
--

DROP TABLE IF EXISTS `yourls_url`;
CREATE TABLE `yourls_url` (
  `keyword` varchar(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `url` text CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  `title` text,
  `timestamp` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,
  `ip` varchar(41) NOT NULL,
  `clicks` int unsigned NOT NULL,
  PRIMARY KEY (`keyword`),
  KEY `ip` (`ip`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

LOCK TABLES `yourls_url` WRITE;
/*!40000 ALTER TABLE `yourls_url` DISABLE KEYS */;
INSERT INTO `yourls_url` VALUES ('ozh','http://ozh.org/','Ozh RICHARD','2009-07-28 12:22:11','127.0.0.1',4),('yourls','https://yourls.org/','YOURLS: Your Own URL Shortener','2020-01-01 10:00:00','::1',1024),('quote','https://example.com/it\'s','It\'s \"quoted\"\nover two lines; really','2021-01-01 00:00:00','10.0.0.1',0),('nulltitle','https://example.com/null',NULL,'0000-00-00 00:00:00','10.0.0.2',7);
/*!40000 ALTER TABLE `yourls_url` ENABLE KEYS */;
UNLOCK TABLES;

INSERT INTO `yourls_log` VALUES (1,'2020-01-01 10:00:00','ozh','direct','Mozilla/5.0 (X11; Linux x86_64)','127.0.0.1','FR');

-- phpMyAdmin writes a column list, one row a line
INSERT INTO `yourls_url` (`keyword`, `url`, `title`, `timestamp`, `ip`, `clicks`) VALUES
('café', 'https://café.example/menu', 'Café ☕', '2022-02-02 02:02:02', '10.0.0.3', 12),
('short', 'https://example.com/short', 'Too few', '2022-02-02 02:02:02', '10.0.0.4'),
('', '', '', '2022-02-02 02:02:02', '10.0.0.5', 0);
